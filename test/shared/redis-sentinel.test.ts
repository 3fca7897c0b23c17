import { QuotaLimiter } from '../../services/gateway/src/quota/quota-limiter';
import { type RedisClient, redisConnector } from '../../services/shared/redis';
import { waitFor } from '../support/ports';
import { RedisSentinel, SENTINEL_FAILOVER_MS } from '../support/redis-sentinel';
import { QUOTA_ON_REDIS_AGAIN_MS } from '../support/waits';

// The failover, then the quota on the new master, on a busy machine.
jest.setTimeout(SENTINEL_FAILOVER_MS + QUOTA_ON_REDIS_AGAIN_MS + QUOTA_ON_REDIS_AGAIN_MS);

/**
 * Redis behind Sentinel (REDIS_SENTINELS): the factory asks the sentinel for the master, quotas
 * count on it, and when the master is lost the sentinel promotes its replica, which the
 * connection follows without a restart; counting is shared again on the new master.
 */
describe('quotas on Redis behind Sentinel', () => {
  let sentinel: RedisSentinel;
  let redis: RedisClient;
  let quota: QuotaLimiter;

  beforeAll(async () => {
    sentinel = await RedisSentinel.start();
    redis = redisConnector(sentinel.env)!.connect('sentinel-test', { hotPath: true });
    redis.on('error', () => undefined);
    await new Promise((resolve) => redis.once('ready', resolve));
    quota = new QuotaLimiter({
      quotas: { free: 5, pro: 1_000, enterprise: 1_000 },
      clock: Date.now,
      redis,
    });
  });

  afterAll(async () => {
    quota.close();
    redis.disconnect();
    await sentinel.stop();
  });

  test('counted on the master the sentinel names, then on the replica it promotes', async () => {
    const decisions = await Promise.all(
      Array.from({ length: 7 }, () => quota.consume('sentinel-key', 'free')),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    const before = await sentinel.masterPort();
    expect(before).toBe(sentinel.master.port);

    await sentinel.master.stop();
    await waitFor(
      async () => ((await sentinel.masterPort()) === sentinel.replica.port ? true : undefined),
      {
        timeoutMs: SENTINEL_FAILOVER_MS,
        what: 'the sentinel to promote the replica',
      },
    );
    // Shared again: a Pro key's count is the new master's.
    await waitFor(
      async () => (quota.problem() === undefined && redis.status === 'ready' ? true : undefined),
      {
        timeoutMs: QUOTA_ON_REDIS_AGAIN_MS,
        what: 'quotas counted on Redis again',
      },
    );
    for (let i = 0; i < 3; i++)
      expect((await quota.consume('after-failover', 'pro')).allowed).toBe(true);
    const replica = sentinel.replica.client();
    try {
      const keys = await replica.keys('quota:after-failover:*');
      expect(keys).toHaveLength(1);
      expect(await replica.get(keys[0]!)).toBe('3');
    } finally {
      replica.disconnect();
    }
  });
});
