import { RedisCluster } from '../support/redis-cluster';
import { RedisServer } from '../support/redis-server';
import { keyedGet, keysCli, startStack, tempDataDir } from '../support/services';

const QUOTA_FREE = 8;

/**
 * Conditional requests are free (docs/api.md#conditional-requests-etag): a read answered 304
 * takes no unit of the quota and still carries the rate-limit headers, whether the gateway's
 * cache answers it or the catalog does (the cache off), on the embedded stack, Redis and a Redis
 * Cluster; a key past its quota still gets its 304s, and its other reads are 429.
 */
describe.each([
  ['the embedded stack', 'none', 'on'],
  ['the embedded stack, the response cache off', 'none', 'off'],
  ['Redis', 'redis', 'on'],
  ['a Redis Cluster', 'cluster', 'on'],
] as const)('free 304s on %s', (_name, redisKind, cache) => {
  let redis: RedisServer | RedisCluster | undefined;
  let stack: Awaited<ReturnType<typeof startStack>>;
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };

  beforeAll(async () => {
    let redisEnv: Record<string, string> = {};
    if (redisKind === 'redis') {
      const server = await RedisServer.start();
      redis = server;
      redisEnv = { REDIS_URL: server.url };
    } else if (redisKind === 'cluster') {
      const cluster = await RedisCluster.start({ masters: 3 });
      redis = cluster;
      redisEnv = cluster.env;
    }
    stack = await startStack({
      ...env,
      ...redisEnv,
      QUOTA_FREE: String(QUOTA_FREE),
      RESPONSE_CACHE: cache,
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await redis?.stop();
  });

  async function newKey(): Promise<string> {
    const created = (await keysCli(
      ['create', '--tier', 'free', '--email', `etag-${Date.now()}@example.com`, '--name', 'ETag'],
      env,
    )) as { apiKey: string };
    return created.apiKey;
  }
  const get = (key: string, url: string, etag?: string) =>
    keyedGet(stack.gateway.url, key, url, etag === undefined ? {} : { 'if-none-match': etag });
  const used = async (key: string) => (await get(key, '/v1/usage')).body.data.used as number;

  test('a 304 takes no unit and carries the rate-limit headers; a changed ETag is a 200 and takes one', async () => {
    const key = await newKey();
    const urls = ['/v1/tools/langchain', '/v1/categories', '/v1/search?q=vector%20database'];
    let spent = 0;
    for (const url of urls) {
      const first = await get(key, url);
      spent += 1;
      expect([url, first.status]).toEqual([url, 200]);
      const etag = first.headers.get('etag')!;
      expect(etag).toMatch(/^(W\/)?"/);
      // Polled: the first conditional read may reach the catalog, the later ones the cache.
      for (let i = 0; i < 4; i++) {
        const again = await get(key, url, etag);
        expect([url, i, again.status]).toEqual([url, i, 304]);
        expect(again.headers.get('x-ratelimit-limit')).toBe(String(QUOTA_FREE));
        expect(again.headers.get('x-ratelimit-remaining')).toBe(String(QUOTA_FREE - spent));
        expect(again.headers.get('ratelimit-policy')).toBe(`"daily";q=${QUOTA_FREE};w=86400`);
      }
      const stale = await get(key, url, '"not-the-etag"');
      spent += 1;
      expect([url, stale.status]).toEqual([url, 200]);
      expect(stale.headers.get('x-ratelimit-remaining')).toBe(String(QUOTA_FREE - spent));
    }
    expect(await used(key)).toBe(spent);
  });

  test('past its quota a key still gets its 304s; any other read is 429', async () => {
    const key = await newKey();
    const first = await get(key, '/v1/tools/langchain');
    const etag = first.headers.get('etag')!;
    for (let i = 1; i < QUOTA_FREE; i++) {
      expect((await get(key, '/v1/tools?limit=1')).status).toBe(200);
    }
    expect((await get(key, '/v1/tools?limit=1')).status).toBe(429);
    const held = await get(key, '/v1/tools/langchain', etag);
    expect(held.status).toBe(304);
    expect(held.headers.get('x-ratelimit-remaining')).toBe('0');
    const changed = await get(key, '/v1/tools/langchain', '"another"');
    expect(changed.status).toBe(429);
    expect(changed.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await used(key)).toBe(QUOTA_FREE);
  });
});
