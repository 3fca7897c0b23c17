import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import zlib from 'node:zlib';
import { CATALOG_VERSION_HEADER } from '../../../services/shared/contract';
import type { Tier } from '../../../services/shared/tiers';
import { asTier, buildTestCatalog, dataset, embeddedStore } from '../../support/catalog';
import type { EmbeddedStore } from '../../../services/catalog/src/store/embedded-store';

const [a, b] = [dataset.tools[0]!.slug, dataset.tools[1]!.slug];
const ROUTES = [
  '/v1/tools?limit=5',
  '/v1/tools?updatedSince=2000-01-01T00:00:00Z&sort=-updatedAt&limit=5',
  `/v1/tools/${a}`,
  '/v1/categories',
  '/v1/search?q=vector',
  `/v1/compare/${a}/${b}`,
];

/**
 * docs/api.md#catalog-changes-and-freshness: ETags that follow the data and the tier, and 304 for a
 * matching If-None-Match.
 */
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

  const get = (url: string, tier: Tier, etag?: string, acceptEncoding?: string) =>
    app.inject({
      url,
      headers: {
        ...asTier(tier),
        ...(etag ? { 'if-none-match': etag } : {}),
        ...(acceptEncoding ? { 'accept-encoding': acceptEncoding } : {}),
      },
    });

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

  test('updatedSince: each instant its own answer and ETag; a change after it, a new one', async () => {
    const newest = (await get('/v1/tools?sort=-updatedAt&limit=1', 'pro')).json().data[0];
    const since = (instant: string) =>
      `/v1/tools?updatedSince=${encodeURIComponent(instant)}&sort=updatedAt`;
    const atNewest = since(newest.updatedAt);
    const justBefore = since(new Date(Date.parse(newest.updatedAt) - 1).toISOString());
    // Twice each: the second from the cache, still not confused with the other instant.
    for (let i = 0; i < 2; i++) {
      expect((await get(atNewest, 'pro')).json().data).toEqual([]);
      expect(
        (await get(justBefore, 'pro')).json().data.map((t: { slug: string }) => t.slug),
      ).toEqual([newest.slug]);
    }
    const before = await get(atNewest, 'free');
    expect((await get(atNewest, 'free', before.headers.etag as string)).statusCode).toBe(304);
    await store.upsert([{ ...dataset.tools[1]!, pricing: 'Changed after the instant' }]);
    const after = await get(atNewest, 'free', before.headers.etag as string);
    expect(after.statusCode).toBe(200);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect(after.json().data).toEqual([
      expect.objectContaining({ slug: b, updatedAt: expect.any(String) }),
    ]);
    expect(after.json().data[0].updatedAt > newest.updatedAt).toBe(true);
  });

  const decode = (response: LightMyRequestResponse) =>
    (response.headers['content-encoding'] === 'br' ? zlib.brotliDecompressSync : zlib.gunzipSync)(
      response.rawPayload,
    ).toString();

  describe.each(['gzip', 'br'])('%s', (encoding) => {
    test.each(ROUTES)(
      '%s: its own ETag (identity + suffix) and 304, before and after caching',
      async (url) => {
        const identity = await get(url, 'pro');
        const etag = identity.headers.etag as string;
        const encodedTag = etag.replace(/"$/, `-${encoding}"`);
        // First the cache miss, then the cached variant.
        for (let i = 0; i < 2; i++) {
          const again = await get(url, 'pro', encodedTag, encoding);
          expect(again.statusCode).toBe(304);
          expect(again.body).toBe('');
          expect(again.headers.etag).toBe(encodedTag);
          expect(again.headers.vary).toBe('accept-encoding');
          expect(again.headers['content-encoding']).toBeUndefined();
          expect(again.headers[CATALOG_VERSION_HEADER]).toBe(String(store.version));
        }
        for (let i = 0; i < 2; i++) {
          const full = await get(url, 'pro', etag, encoding);
          expect(full.statusCode).toBe(200);
          expect(full.headers['content-encoding']).toBe(encoding);
          expect(full.headers.etag).toBe(encodedTag);
          expect(full.headers.vary).toBe('accept-encoding');
          expect(decode(full)).toBe(identity.body);
          expect(full.headers[CATALOG_VERSION_HEADER]).toBe(String(store.version));
        }
        const plain = await get(url, 'pro', encodedTag);
        expect(plain.statusCode).toBe(200);
        expect(plain.headers['content-encoding']).toBeUndefined();
        expect(plain.body).toBe(identity.body);
      },
    );
  });

  test('a small body has one ETag whatever the Accept-Encoding', async () => {
    const url = `/v1/tools/${a}`;
    const identity = await get(url, 'free');
    expect(identity.rawPayload.length).toBeLessThan(1024);
    const asked = await get(url, 'free', identity.headers.etag as string, 'gzip, br');
    expect(asked.statusCode).toBe(304);
    expect(asked.headers.etag).toBe(identity.headers.etag);
    expect(asked.headers.vary).toBeUndefined();
  });

  test('a repeated request compresses nothing: each variant is compressed once', async () => {
    // zlib's stream constructors are read-only properties: counted by redefining them.
    const names = ['gzipSync', 'createGzip', 'brotliCompressSync', 'createBrotliCompress'] as const;
    const originals = names.map((name) => Object.getOwnPropertyDescriptor(zlib, name)!);
    const counters = names.map((name, i) => {
      const counter = jest.fn(originals[i]!.value as (...args: unknown[]) => unknown);
      Object.defineProperty(zlib, name, { ...originals[i], value: counter });
      return counter;
    });
    // The plugin takes the synchronous compressors when it is registered: a catalog of its own.
    const fresh = await buildTestCatalog(store);
    try {
      // A body compressed in one go (about 1.4 KB) and one compressed as a stream (440 KB).
      for (const url of ['/v1/categories', '/v1/tools?limit=100']) {
        for (const encoding of ['gzip', 'br']) {
          const bodies: Buffer[] = [];
          for (let i = 0; i < 3; i++) {
            const response = await fresh.inject({
              url,
              headers: { ...asTier('enterprise'), 'accept-encoding': encoding },
            });
            expect(response.headers['content-encoding']).toBe(encoding);
            bodies.push(response.rawPayload);
          }
          expect(bodies.every((body) => body.equals(bodies[0]!))).toBe(true);
        }
      }
      expect(counters.map((counter) => counter.mock.calls.length)).toEqual([1, 1, 1, 1]);
    } finally {
      await fresh.close();
      names.forEach((name, i) => Object.defineProperty(zlib, name, originals[i]!));
    }
  });
});
