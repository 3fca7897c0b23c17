import type { FastifyInstance } from 'fastify';
import { buildCatalogApp } from '../../../services/catalog/src/app';
import { CatalogChanges } from '../../../services/catalog/src/changes/catalog-changes';
import type { CatalogStore } from '../../../services/catalog/src/store/catalog-store';
import { LocalChangeFeed } from '../../../services/shared/change-feed/local-change-feed';
import {
  TEST_INTERNAL_TOKEN,
  asTier,
  dataset,
  embeddedStore,
  newTool,
  withoutProvenance,
} from '../../support/catalog';
import { tempDataDir } from '../../support/services';

const ADMIN_TOKEN = 'admin-token-for-tests-0123456789';

async function catalogWithAdmin(store: CatalogStore, feed: LocalChangeFeed, adminToken?: string) {
  return buildCatalogApp({
    store,
    meta: dataset.meta,
    internalToken: TEST_INTERNAL_TOKEN,
    adminToken,
    changes: new CatalogChanges(store, feed),
    logger: false,
  });
}

/**
 * docs/api.md#catalog-changes-and-freshness: the admin endpoints on the catalog's internal port.
 */
describe('admin endpoints', () => {
  let store: CatalogStore;
  let feed: LocalChangeFeed;
  let app: FastifyInstance;
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeEach(async () => {
    store = embeddedStore();
    feed = new LocalChangeFeed(tempDataDir());
    app = await catalogWithAdmin(store, feed, ADMIN_TOKEN);
  });
  afterEach(async () => {
    await app.close();
    await feed.close();
    await store.close();
  });

  test('PUT creates (201), then updates (200) with the changed fields', async () => {
    const created = await app.inject({
      method: 'PUT',
      url: '/admin/v1/tools/zephyr-notes',
      headers: admin,
      payload: newTool(),
    });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ created: ['zephyr-notes'] });
    const updated = await app.inject({
      method: 'PUT',
      url: '/admin/v1/tools/zephyr-notes',
      headers: admin,
      payload: newTool({ pricing: 'Now paid' }),
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.json().updated).toEqual([{ slug: 'zephyr-notes', changedFields: ['pricing'] }]);
    const served = await app.inject({ url: '/v1/tools/zephyr-notes', headers: asTier('pro') });
    expect(served.json().data.pricing).toBe('Now paid');
  });

  test('PUT: the server sets updatedAt; the record as served, PUT back, changes nothing', async () => {
    const put = (payload: object) =>
      app.inject({ method: 'PUT', url: '/admin/v1/tools/zephyr-notes', headers: admin, payload });
    const before = Date.now();
    expect((await put({ ...newTool(), updatedAt: '2999-01-01T00:00:00Z' })).statusCode).toBe(201);
    const served = (
      await app.inject({ url: '/v1/tools/zephyr-notes', headers: asTier('pro') })
    ).json().data;
    expect(Date.parse(served.updatedAt)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(served.updatedAt)).toBeLessThan(Date.now() + 60_000);
    const again = await put(served);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ updated: [], unchanged: ['zephyr-notes'] });
    const bad = await put({ ...served, updatedAt: 'soon' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/zephyr-notes: updatedAt: .*date-time/);
  });

  test('PUT of an invalid record is 400 naming the record and the field; nothing changes', async () => {
    const response = await app.inject({
      method: 'PUT',
      url: '/admin/v1/tools/zephyr-notes',
      headers: admin,
      payload: newTool({ website: 'ftp://example.com' }),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/zephyr-notes: website/);
    expect(await store.getTool('zephyr-notes')).toBeNull();
  });

  test('PUT without source and verifiedAt: defaults for a new tool, the stored ones after', async () => {
    const put = (payload: object) =>
      app.inject({ method: 'PUT', url: '/admin/v1/tools/zephyr-notes', headers: admin, payload });
    const served = async () =>
      (await app.inject({ url: '/v1/tools/zephyr-notes', headers: asTier('free') })).json().data;
    const older = withoutProvenance(newTool());
    const before = new Date().toISOString();
    expect((await put(older)).statusCode).toBe(201);
    const created = await served();
    expect(created.source).toBe(older.website);
    expect(created.verifiedAt >= before).toBe(true);
    const checked = { ...older, source: 'https://zephyr.example/pricing', verifiedAt: before };
    expect((await put(checked)).json().updated).toEqual([
      { slug: 'zephyr-notes', changedFields: ['source', 'verifiedAt'] },
    ]);
    const edited = await put({ ...older, pricing: 'Now paid' });
    expect(edited.json().updated).toEqual([{ slug: 'zephyr-notes', changedFields: ['pricing'] }]);
    expect(await served()).toMatchObject({ source: checked.source, verifiedAt: before });
    const bad = await put({ ...older, source: 'zephyr.example/pricing' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/zephyr-notes: source: /);
  });

  test('an import is put in NFC before it is checked and stored: the tool is served composed', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/admin/v1/import',
      headers: admin,
      payload: [newTool({ name: 'Ze\u0301phyr Notes', pros: ['Fast', 'Nai\u0308ve UI'] })],
    });
    expect(response.statusCode).toBe(200);
    const served = await app.inject({ url: '/v1/tools/zephyr-notes', headers: asTier('pro') });
    expect(served.json().data).toMatchObject({
      name: 'Z\u00e9phyr Notes',
      pros: ['Fast', 'Na\u00efve UI'],
    });
  });

  test('text with invisible or bidi characters is refused naming the record and the field', async () => {
    const response = await app.inject({
      method: 'PUT',
      url: '/admin/v1/tools/zephyr-notes',
      headers: admin,
      payload: newTool({ name: 'Zephyr\u202e Notes' }),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(
      /zephyr-notes: name: must be text without control characters, invisible formatting/,
    );
    expect(await store.getTool('zephyr-notes')).toBeNull();
  });

  test('a body that is not valid UTF-8 is a 400 saying so; nothing changes', async () => {
    const json = JSON.stringify([newTool({ name: 'Zephyr NOTES' })]);
    const response = await app.inject({
      method: 'POST',
      url: '/admin/v1/import',
      headers: { ...admin, 'content-type': 'application/json' },
      payload: Buffer.from(json.replace('NOTES', 'N\u00d8TES'), 'latin1'),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: 'The request body is not valid UTF-8' });
    expect(await store.getTool('zephyr-notes')).toBeNull();
  });

  test('PUT with a slug in the body other than the path is 400', async () => {
    const response = await app.inject({
      method: 'PUT',
      url: '/admin/v1/tools/zephyr-notes',
      headers: admin,
      payload: newTool({ slug: 'other-slug' }),
    });
    expect(response.statusCode).toBe(400);
  });

  test('DELETE is 204, then 404', async () => {
    const slug = dataset.tools[0]!.slug;
    const first = await app.inject({
      method: 'DELETE',
      url: `/admin/v1/tools/${slug}`,
      headers: admin,
    });
    expect(first.statusCode).toBe(204);
    expect(first.body).toBe('');
    const again = await app.inject({
      method: 'DELETE',
      url: `/admin/v1/tools/${slug}`,
      headers: admin,
    });
    expect(again.statusCode).toBe(404);
  });

  test('POST /import: the summary; one invalid record makes it a 400 that changes nothing', async () => {
    const ok = await app.inject({
      method: 'POST',
      url: '/admin/v1/import',
      headers: admin,
      payload: [newTool(), dataset.tools[1]],
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({
      created: ['zephyr-notes'],
      unchanged: [dataset.tools[1]!.slug],
    });
    const version = store.version;
    const bad = await app.inject({
      method: 'POST',
      url: '/admin/v1/import',
      headers: admin,
      payload: [newTool({ slug: 'another-one', name: 'Another One' }), { slug: 'half-a-tool' }],
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/half-a-tool/);
    expect(store.version).toBe(version);
    expect(await store.getTool('another-one')).toBeNull();
  });

  test.each([
    ['no Authorization header', {}],
    ['a wrong token', { authorization: 'Bearer wrong-token-wrong-token-000' }],
    ['the gateway internal token instead', asTier('enterprise')],
  ])('401 with %s', async (_name, headers) => {
    const response = await app.inject({
      method: 'DELETE',
      url: `/admin/v1/tools/${dataset.tools[0]!.slug}`,
      headers,
    });
    expect(response.statusCode).toBe(401);
    expect(Object.keys(response.json())).toEqual(['error']);
    expect(await store.getTool(dataset.tools[0]!.slug)).not.toBeNull();
  });

  test('without ADMIN_TOKEN no admin route exists at all', async () => {
    const plain = await catalogWithAdmin(store, feed, undefined);
    expect(plain.hasRoute({ method: 'PUT', url: '/admin/v1/tools/:slug' })).toBe(false);
    expect(plain.hasRoute({ method: 'POST', url: '/admin/v1/import' })).toBe(false);
    const response = await plain.inject({
      method: 'POST',
      url: '/admin/v1/import',
      headers: { ...asTier('enterprise'), authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: [newTool()],
    });
    expect(response.statusCode).toBe(404);
    await plain.close();
  });
});
