import type { CatalogStore } from '../../services/catalog/src/store/catalog-store';
import { asTier, buildTestCatalog, dataset, embeddedStore } from '../support/catalog';

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
