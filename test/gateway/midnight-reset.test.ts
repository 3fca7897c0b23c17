import { RedisServer } from '../support/redis-server';
import { inProcessGateway, registerInProcess } from '../support/gateway';
import { ServiceProcess } from '../support/services';

/** SPEC B4: the window is the UTC day; every quota resets at 00:00:00 UTC. */
describe('midnight reset with an injected clock, real Redis and catalog', () => {
  let redis: RedisServer;
  let catalog: ServiceProcess;
  let now = Date.parse('2026-03-14T23:59:58.000Z');
  let gateway: Awaited<ReturnType<typeof inProcessGateway>>;

  beforeAll(async () => {
    redis = await RedisServer.start();
    catalog = await ServiceProcess.start('catalog', {});
    gateway = await inProcessGateway(
      { CATALOG_URL: catalog.url, REDIS_URL: redis.url, QUOTA_FREE: '3' },
      () => now,
    );
  });

  afterAll(async () => {
    await gateway.close();
    await catalog.stop();
    await redis.stop();
  });

  test('an exhausted key is admitted again after midnight UTC, with a fresh count', async () => {
    const key = await registerInProcess(gateway.app, 'midnight@example.com');
    const call = () => gateway.app.inject({ url: '/v1/categories', headers: { 'x-api-key': key } });

    for (let i = 0; i < 3; i++) expect((await call()).statusCode).toBe(200);
    const late = await call();
    expect(late.statusCode).toBe(429);
    expect(late.headers['x-ratelimit-reset']).toBe(
      String(Date.parse('2026-03-15T00:00:00Z') / 1000),
    );
    expect(late.headers['retry-after']).toBe('2');
    expect(late.headers.ratelimit).toBe('"daily";r=0;t=2');

    const client = redis.client();
    const keys = await client.keys('quota:*');
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/:2026-03-14$/);
    const ttl = await client.ttl(keys[0]!);
    expect(ttl).toBeGreaterThanOrEqual(1);
    expect(ttl).toBeLessThanOrEqual(2);

    now = Date.parse('2026-03-15T00:00:01.000Z');
    const next = await call();
    expect(next.statusCode).toBe(200);
    expect(next.headers['x-ratelimit-remaining']).toBe('2');
    expect(next.headers['x-ratelimit-reset']).toBe(
      String(Date.parse('2026-03-16T00:00:00Z') / 1000),
    );
    expect(await client.keys('quota:*:2026-03-15')).toHaveLength(1);
    client.disconnect();
  });
});
