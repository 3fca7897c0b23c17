import type { CatalogStore } from '../../../services/catalog/src/store/catalog-store';
import { CATALOG_VERSION_HEADER } from '../../../services/shared/contract';
import type { Tier } from '../../../services/shared/tiers';
import { asTier, buildTestCatalog, dataset, embeddedStore } from '../../support/catalog';

/** The response cache must never mix tiers, keep failures or outlive the data behind it. */
describe('response cache', () => {
  test('a hit makes no store call; a new catalog version is a miss', async () => {
    const store = embeddedStore();
    const reads: string[] = [];
    const counting = new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (['listTools', 'getTool', 'listCategories', 'search'].includes(String(name))) {
            reads.push(String(name));
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    }) as CatalogStore;
    const app = await buildTestCatalog(counting);
    const urls = ['/v1/tools?limit=3', '/v1/tools/langchain', '/v1/categories', '/v1/search?q=rag'];
    for (const url of urls) await app.inject({ url, headers: asTier('pro') });
    expect(reads).toHaveLength(urls.length);
    for (const url of urls) await app.inject({ url, headers: asTier('pro') });
    expect(reads).toHaveLength(urls.length);
    await store.upsert([{ ...dataset.tools[0]!, pricing: 'A new version' }]);
    for (const url of urls) await app.inject({ url, headers: asTier('pro') });
    expect(reads).toHaveLength(2 * urls.length);
    await app.close();
    await store.close();
  });

  test('a repeated request gets the same body, each tier its own', async () => {
    const app = await buildTestCatalog();
    const get = (tier: 'free' | 'pro') =>
      app.inject({ url: '/v1/tools/langchain', headers: asTier(tier) });
    const free1 = await get('free');
    const pro = await get('pro');
    const free2 = await get('free');
    expect(free2.body).toBe(free1.body);
    expect(free2.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(Object.keys(free2.json().data)).not.toContain('longDescription');
    expect(Object.keys(pro.json().data)).toContain('longDescription');
    expect((await get('pro')).body).toBe(pro.body);
    await app.close();
  });

  test('answers it serves or stores carry the catalog version they were computed at', async () => {
    const store = embeddedStore();
    const app = await buildTestCatalog(store);
    const [a, b] = dataset.tools;
    const url = `/v1/tools/${a!.slug}`;
    const get = (etag?: string) =>
      app.inject({ url, headers: { ...asTier('pro'), ...(etag && { 'if-none-match': etag }) } });
    const version = () => String(store.version);
    const first = version();

    const miss = await get();
    const hit = await get();
    const notModified = await get(miss.headers.etag as string);
    expect([miss.statusCode, hit.statusCode, notModified.statusCode]).toEqual([200, 200, 304]);
    for (const answer of [miss, hit, notModified]) {
      expect(answer.headers[CATALOG_VERSION_HEADER]).toBe(first);
    }

    // Another tool changes: this answer is computed again at the new version, with the same
    // bytes and ETag, so the miss itself is a 304.
    await store.upsert([{ ...b!, pricing: 'Another tool changed' }]);
    expect(version()).not.toBe(first);
    const recomputed = await get(miss.headers.etag as string);
    expect(recomputed.statusCode).toBe(304);
    expect(recomputed.headers[CATALOG_VERSION_HEADER]).toBe(version());

    // This tool changes: a new body at the newest version, then served from the cache as such.
    await store.upsert([{ ...a!, pricing: 'This tool changed' }]);
    const changed = await get(miss.headers.etag as string);
    expect(changed.statusCode).toBe(200);
    expect(changed.json().data.pricing).toBe('This tool changed');
    expect(changed.headers[CATALOG_VERSION_HEADER]).toBe(version());
    expect((await get()).headers[CATALOG_VERSION_HEADER]).toBe(version());
    await app.close();
    await store.close();
  });

  test('errors and answers of other routes carry no catalog version', async () => {
    const app = await buildTestCatalog();
    const [a, b] = dataset.tools;
    const answers: [string, Tier, number][] = [
      ['/v1/tools?limit=500', 'free', 400],
      ['/v1/tools/no-such-tool', 'free', 404],
      [`/v1/compare/${a!.slug}/${b!.slug}`, 'free', 403],
      ['/v1/export?format=json', 'enterprise', 200],
      ['/healthz', 'free', 200],
    ];
    for (const [url, tier, status] of answers) {
      // Twice: neither a first answer nor a repeated one carries it.
      for (let i = 0; i < 2; i++) {
        const answer = await app.inject({ url, headers: asTier(tier) });
        expect([url, answer.statusCode, answer.headers[CATALOG_VERSION_HEADER]]).toEqual([
          url,
          status,
          undefined,
        ]);
      }
    }
    await app.close();
  });

  test('an answer left plain by x-no-compression is not kept for others', async () => {
    const app = await buildTestCatalog();
    const get = (headers: Record<string, string> = {}) =>
      app.inject({
        url: '/v1/tools?limit=20',
        headers: { ...asTier('pro'), 'accept-encoding': 'gzip', ...headers },
      });
    const plain = await get({ 'x-no-compression': '1' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers[CATALOG_VERSION_HEADER]).toBeUndefined();
    const plainAgain = await get({
      'x-no-compression': '1',
      'if-none-match': plain.headers.etag as string,
    });
    expect(plainAgain.statusCode).toBe(304);
    for (let i = 0; i < 2; i++) {
      const encoded = await get();
      expect(encoded.headers['content-encoding']).toBe('gzip');
      expect(encoded.headers.etag).toBe((plain.headers.etag as string).replace(/"$/, '-gzip"'));
      expect(encoded.headers[CATALOG_VERSION_HEADER]).toBeDefined();
    }
    await app.close();
  });

  test('errors are not cached, and a cached route still needs the internal token', async () => {
    const app = await buildTestCatalog();
    await app.inject({ url: '/v1/tools?limit=2', headers: asTier('free') });
    expect((await app.inject({ url: '/v1/tools?limit=2' })).statusCode).toBe(401);
    for (let i = 0; i < 2; i++) {
      const bad = await app.inject({ url: '/v1/tools?limit=500', headers: asTier('free') });
      expect(bad.statusCode).toBe(400);
    }
    await app.close();
  });
});
