import { asTier, buildTestCatalog } from '../support/catalog';

/** The embedded store's response cache must never mix tiers or keep failures. */
describe('response cache (embedded store)', () => {
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
