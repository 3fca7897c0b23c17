import { HISTORY_DAYS } from '../../../services/gateway/src/quota/quota-limiter';
import { RedisServer } from '../../support/redis-server';
import { inProcessGateway, registerInProcess } from '../../support/gateway';
import { ServiceProcess } from '../../support/services';

/**
 * docs/api.md#quotas-and-rate-limit-headers: the window is the UTC day; every quota resets at
 * 00:00:00 UTC.
 *
 * The gateway's clock is injected, and the day turns while yesterday's counter still exists in
 * Redis (its expiry is minutes away in real time): the fresh count must come from the date in
 * the counter's key, not from Redis expiring the old one, so nothing here waits on real time.
 */
describe('midnight reset with an injected clock, real Redis and catalog', () => {
  let redis: RedisServer;
  let catalog: ServiceProcess;
  let now = Date.parse('2026-03-14T23:55:00.000Z');
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

  test('an exhausted key is admitted again at 00:00:00 UTC, with a fresh count', async () => {
    const key = await registerInProcess(gateway.app, 'midnight@example.com');
    const call = () => gateway.app.inject({ url: '/v1/categories', headers: { 'x-api-key': key } });
    const client = redis.client();
    try {
      for (let i = 0; i < 3; i++) expect((await call()).statusCode).toBe(200);
      const exhausted = await call();
      expect(exhausted.statusCode).toBe(429);
      expect(exhausted.headers['x-ratelimit-reset']).toBe(
        String(Date.parse('2026-03-15T00:00:00Z') / 1000),
      );
      expect(exhausted.headers['retry-after']).toBe('300');
      expect(exhausted.headers.ratelimit).toBe('"daily";r=0;t=300');

      const [today] = await client.keys('quota:*');
      expect(today).toMatch(/:2026-03-14$/);
      // The counter is the day's usage too: it expires 30 days after the midnight of the clock
      // that set it, only a clean-up.
      const ttl = await client.ttl(today!);
      expect(ttl).toBeGreaterThan(HISTORY_DAYS * 86_400);
      expect(ttl).toBeLessThanOrEqual(HISTORY_DAYS * 86_400 + 300);

      // The last millisecond of the day is still that day.
      now = Date.parse('2026-03-14T23:59:59.999Z');
      const last = await call();
      expect(last.statusCode).toBe(429);
      expect(last.headers['retry-after']).toBe('1');

      now = Date.parse('2026-03-15T00:00:00.000Z');
      const next = await call();
      expect(next.statusCode).toBe(200);
      expect(next.headers['x-ratelimit-remaining']).toBe('2');
      expect(next.headers['x-ratelimit-reset']).toBe(
        String(Date.parse('2026-03-16T00:00:00Z') / 1000),
      );
      expect(next.headers.ratelimit).toBe('"daily";r=2;t=86400');

      // Yesterday's counter has not expired: the new day has a counter of its own.
      expect(await client.get(today!)).toBe('3');
      const [tomorrow] = await client.keys('quota:*:2026-03-15');
      expect(await client.get(tomorrow!)).toBe('1');
    } finally {
      client.disconnect();
    }
  });
});
