import type { Redis } from 'ioredis';
import { QuotaLimiter } from '../../../services/gateway/src/quota/quota-limiter';
import { createRedis } from '../../../services/shared/redis';
import { RedisServer } from '../../support/redis-server';

const quotas = { free: 3, pro: 10, enterprise: 50 };
const now = Date.parse('2026-05-01T12:00:00Z');

/**
 * docs/api.md#quotas-and-rate-limit-headers: quotas are per key, so a key re-tiered mid-day keeps
 * the day's count.
 */
describe.each([
  ['on real Redis', true],
  ['in memory', false],
])('a re-tiered key keeps its daily count, %s', (_where, withRedis) => {
  let server: RedisServer | undefined;
  let redis: Redis | undefined;
  let quota: QuotaLimiter;

  beforeAll(async () => {
    if (withRedis) {
      server = await RedisServer.start();
      const client = createRedis(server.url, 'quota-tiers-test');
      await new Promise((resolve) => client.once('ready', resolve));
      redis = client;
    }
    quota = new QuotaLimiter({ quotas, clock: () => now, ...(redis ? { redis } : {}) });
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  test('upgraded: the Pro quota counts what the key used as Free', async () => {
    for (let i = 0; i < 2; i++) expect((await quota.consume('key_up', 'free')).allowed).toBe(true);
    const upgraded = await quota.consume('key_up', 'pro');
    expect(upgraded).toMatchObject({ allowed: true, limit: 10, remaining: 7 });
    if (redis) expect(await redis.keys('quota:*')).toEqual(['quota:key_up:2026-05-01']);
  });

  test('downgraded: a key that used more than the Free quota today is refused at once', async () => {
    for (let i = 0; i < 5; i++) expect((await quota.consume('key_down', 'pro')).allowed).toBe(true);
    expect(await quota.consume('key_down', 'free')).toMatchObject({
      allowed: false,
      limit: 3,
      remaining: 0,
    });
    // The refusals used nothing: back on Pro, the count goes on from 5.
    expect(await quota.consume('key_down', 'pro')).toMatchObject({ allowed: true, remaining: 4 });
  });
});
