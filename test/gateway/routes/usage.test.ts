import { HISTORY_DAYS } from '../../../services/gateway/src/quota/quota-limiter';
import { inProcessDependencies, inProcessGateway, registerInProcess } from '../../support/gateway';
import { RedisServer } from '../../support/redis-server';
import { ServiceProcess, tempDataDir } from '../../support/services';
import { RATE_HEADERS } from '../../support/rate-limit-headers';

type Gateway = Awaited<ReturnType<typeof inProcessGateway>>;

const DAY_MS = 86_400_000;
const MONDAY = Date.parse('2026-03-09T10:00:00Z');

/**
 * `GET /v1/usage`: the calling key's use today and on each of the last 30 UTC days, newest first,
 * taken from the quota's own daily counters; it takes no unit, still carries the rate-limit
 * headers, and answers a key past its quota. On Redis a day's count outlives the gateway.
 */
describe.each([
  ['in memory', false],
  ['on Redis', true],
])('GET /v1/usage, quotas %s', (_name, withRedis) => {
  let redis: RedisServer | undefined;
  let catalog: ServiceProcess;
  let now = MONDAY;
  const gateways: Gateway[] = [];
  // One key store for every gateway of the suite, as replicas share theirs.
  const dataDir = tempDataDir();
  const env = () => ({
    DATA_DIR: dataDir,
    CATALOG_URL: catalog.url,
    QUOTA_FREE: '5',
    ...(redis ? { REDIS_URL: redis.url } : {}),
  });
  const start = async () => {
    const gateway = await inProcessGateway(env(), () => now);
    gateways.push(gateway);
    return gateway;
  };

  beforeAll(async () => {
    redis = withRedis ? await RedisServer.start() : undefined;
    catalog = await ServiceProcess.start('catalog', {});
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    await catalog.stop();
    await redis?.stop();
  });

  test('today, the limit, its reset and 30 days newest first; no unit taken; the headers set', async () => {
    now = MONDAY;
    const gateway = await start();
    const key = await registerInProcess(gateway.app, `usage-${withRedis}@example.com`);
    const call = (url: string) => gateway.app.inject({ url, headers: { 'x-api-key': key } });
    for (let i = 0; i < 3; i++) expect((await call('/v1/categories')).statusCode).toBe(200);
    now = MONDAY + DAY_MS;
    for (let i = 0; i < 2; i++) expect((await call('/v1/categories')).statusCode).toBe(200);

    const first = await call('/v1/usage');
    const second = await call('/v1/usage');
    expect(first.statusCode).toBe(200);
    for (const name of RATE_HEADERS) expect(first.headers[name]).toBeDefined();
    // Free of quota: asking twice leaves the remaining units as they were.
    expect(first.headers['x-ratelimit-remaining']).toBe('3');
    expect(second.headers['x-ratelimit-remaining']).toBe('3');
    const { data, meta } = first.json();
    expect(meta.attribution).toEqual(expect.any(String));
    expect(data).toMatchObject({
      keyId: expect.stringMatching(/^key_/),
      tier: 'free',
      limit: 5,
      used: 2,
      remaining: 3,
      resetAt: '2026-03-11T00:00:00.000Z',
    });
    expect(data.history).toHaveLength(HISTORY_DAYS);
    expect(data.history.slice(0, 3)).toEqual([
      { date: '2026-03-10', used: 2 },
      { date: '2026-03-09', used: 3 },
      { date: '2026-03-08', used: 0 },
    ]);
    expect(data.history.at(-1)).toEqual({ date: '2026-02-09', used: 0 });
  });

  test('a key past its quota still gets its usage, with the headers of an exhausted key', async () => {
    now = MONDAY + 2 * DAY_MS;
    const gateway = gateways[0]!;
    const key = await registerInProcess(gateway.app, `spent-${withRedis}@example.com`);
    const call = (url: string) => gateway.app.inject({ url, headers: { 'x-api-key': key } });
    for (let i = 0; i < 5; i++) expect((await call('/v1/categories')).statusCode).toBe(200);
    expect((await call('/v1/categories')).statusCode).toBe(429);
    const usage = await call('/v1/usage');
    expect(usage.statusCode).toBe(200);
    expect(usage.headers['x-ratelimit-remaining']).toBe('0');
    expect(usage.json().data).toMatchObject({ used: 5, remaining: 0 });
    expect((await gateway.app.inject({ url: '/v1/usage' })).statusCode).toBe(401);
  });

  if (withRedis) {
    test("on Redis, a gateway started later sees the day's counts and the history", async () => {
      now = MONDAY + DAY_MS;
      const first = gateways[0]!;
      const key = await registerInProcess(first.app, 'restart@example.com');
      for (let i = 0; i < 4; i++) {
        await first.app.inject({ url: '/v1/categories', headers: { 'x-api-key': key } });
      }
      await first.close();
      gateways.shift();
      const later = await start();
      const usage = await later.app.inject({ url: '/v1/usage', headers: { 'x-api-key': key } });
      expect(usage.json().data).toMatchObject({ used: 4, remaining: 1 });
      expect(usage.json().data.history[0]).toEqual({ date: '2026-03-10', used: 4 });
    });

    test("a replica's first request is counted on Redis, not by the replica alone while it connects", async () => {
      now = MONDAY + 3 * DAY_MS;
      const gateway = gateways[0]!;
      const key = await registerInProcess(gateway.app, 'first-request@example.com');
      const call = (url: string) => gateway.app.inject({ url, headers: { 'x-api-key': key } });
      for (let i = 0; i < 3; i++) expect((await call('/v1/categories')).statusCode).toBe(200);
      const { keyId } = (await call('/v1/usage')).json().data;
      // Asked the moment its dependencies are built, before any app or listener exists.
      const { deps } = await inProcessDependencies(env(), () => now);
      try {
        expect((await deps.quota.peek(keyId, 'free')).remaining).toBe(2);
      } finally {
        await deps.close();
      }
    });
  }
});
