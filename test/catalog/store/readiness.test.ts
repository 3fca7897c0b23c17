import type { FastifyInstance } from 'fastify';
import { NOT_SEEDED } from '../../../services/catalog/src/store/catalog-readiness';
import { EmbeddedStore } from '../../../services/catalog/src/store/embedded-store';
import { INTERNAL_HEADERS, INTERNAL_PATHS } from '../../../services/shared/contract';
import {
  TEST_INTERNAL_TOKEN,
  buildTestCatalog,
  embeddedStore,
  newTool,
} from '../../support/catalog';
import { tempDataDir } from '../../support/services';

/**
 * The catalog's /readyz says whether there is a catalog to serve: a store that never held a
 * tool (a MongoDB the seed has not reached yet; here an embedded store given no dataset, the
 * same version 0) is not ready, so no traffic reaches an empty catalog.
 */
describe('catalog readiness', () => {
  const opened: Array<{ app: FastifyInstance; store: EmbeddedStore }> = [];
  const open = async (store: EmbeddedStore) => {
    const app = await buildTestCatalog(store);
    opened.push({ app, store });
    return app;
  };
  afterEach(async () => {
    for (const { app, store } of opened.splice(0)) {
      await app.close();
      await store.close();
    }
  });

  test('a store that never held a tool is not ready, and says why', async () => {
    const app = await open(new EmbeddedStore(tempDataDir(), []));
    const res = await app.inject({ url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: 'unavailable', reason: NOT_SEEDED });
    expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);
  });

  test('becomes ready with its first tool, and stays ready when operators delete every tool', async () => {
    const store = new EmbeddedStore(tempDataDir(), []);
    const app = await open(store);
    await store.upsert([newTool()]);
    expect((await app.inject({ url: '/readyz' })).json()).toEqual({ status: 'ready' });
    await store.delete(newTool().slug);
    expect((await store.listTools({ page: 1, limit: 1, sort: 'name' })).total).toBe(0);
    expect((await app.inject({ url: '/readyz' })).statusCode).toBe(200);
  });

  test('a store seeded with the bundled dataset is ready', async () => {
    const app = await open(embeddedStore());
    expect((await app.inject({ url: '/readyz' })).json()).toEqual({ status: 'ready' });
  });

  test('the gateways ask it with their token: the same answer, or 401 for any other token', async () => {
    const ask = (app: FastifyInstance, token?: string) =>
      app.inject({
        url: INTERNAL_PATHS.readiness,
        headers: token === undefined ? {} : { [INTERNAL_HEADERS.token]: token },
      });
    const seeded = await open(embeddedStore());
    const right = await ask(seeded, TEST_INTERNAL_TOKEN);
    expect([right.statusCode, right.json()]).toEqual([200, { status: 'ready' }]);
    for (const token of [undefined, 'another-token-of-the-same-size!']) {
      const refused = await ask(seeded, token);
      expect(refused.statusCode).toBe(401);
      expect(Object.keys(refused.json())).toEqual(['error']);
    }
    const empty = await ask(await open(new EmbeddedStore(tempDataDir(), [])), TEST_INTERNAL_TOKEN);
    expect([empty.statusCode, empty.json()]).toEqual([
      503,
      { status: 'unavailable', reason: NOT_SEEDED },
    ]);
  });
});
