import type { FastifyInstance } from 'fastify';
import type { Tier } from '../../services/shared/tiers';
import { asTier, buildTestCatalog, dataset, embeddedStore } from '../support/catalog';
import type { EmbeddedStore } from '../../services/catalog/src/store/embedded-store';

const [a, b] = [dataset.tools[0]!.slug, dataset.tools[1]!.slug];
const ROUTES = [
  '/v1/tools?limit=5',
  `/v1/tools/${a}`,
  '/v1/categories',
  '/v1/search?q=vector',
  `/v1/compare/${a}/${b}`,
];

/** SPEC B9: ETags that follow the data and the tier, and 304 for a matching If-None-Match. */
describe('ETag and If-None-Match', () => {
  let store: EmbeddedStore;
  let app: FastifyInstance;

  beforeAll(async () => {
    store = embeddedStore();
    app = await buildTestCatalog(store);
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const get = (url: string, tier: Tier, etag?: string) =>
    app.inject({ url, headers: { ...asTier(tier), ...(etag ? { 'if-none-match': etag } : {}) } });

  test.each(ROUTES)(
    '%s: 304 with no body for its own ETag, before and after caching',
    async (url) => {
      const first = await get(url, 'pro');
      expect(first.statusCode).toBe(200);
      const etag = first.headers.etag as string;
      expect(etag).toMatch(/^"[\w-]+"$/);
      for (let i = 0; i < 2; i++) {
        const again = await get(url, 'pro', etag);
        expect(again.statusCode).toBe(304);
        expect(again.body).toBe('');
        expect(again.headers.etag).toBe(etag);
      }
      expect((await get(url, 'pro', '"something-else"')).statusCode).toBe(200);
      expect((await get(url, 'pro', `"x", W/${etag}`)).statusCode).toBe(304);
    },
  );

  test('a Free ETag is no good for Pro, even where the bodies are alike', async () => {
    const free = await get('/v1/categories', 'free');
    const pro = await get('/v1/categories', 'pro', free.headers.etag as string);
    expect(pro.statusCode).toBe(200);
    expect(pro.headers.etag).not.toBe(free.headers.etag);
  });

  test('a changed tool gives a new ETag, and the old one no longer matches', async () => {
    const url = `/v1/tools/${a}`;
    const before = await get(url, 'pro');
    await store.upsert([{ ...dataset.tools[0]!, pricing: 'Changed pricing' }]);
    const after = await get(url, 'pro', before.headers.etag as string);
    expect(after.statusCode).toBe(200);
    expect(after.json().data.pricing).toBe('Changed pricing');
    expect(after.headers.etag).not.toBe(before.headers.etag);
  });
});
