import { waitFor } from '../../support/ports';
import { redisStack } from '../../support/redis-stack';
import { registerKey } from '../../support/services';
import { QUOTA_ON_REDIS_AGAIN_MS } from '../../support/waits';

/**
 * docs/api.md#quotas-and-rate-limit-headers "never admitted more than the quota" when Redis loses
 * its counters (a restart without persistence, an outage followed by one): the replica's own count
 * for the day still holds.
 */
describe('Redis restarted empty, one gateway, quota 5', () => {
  // The support server keeps nothing on disk, like `--save "" --appendonly no`.
  const fixture = redisStack({ QUOTA_FREE: '5' });
  const { call, insuranceGauge } = fixture;

  /** How many of n sequential requests were admitted; anything but 200 or 429 fails. */
  const admitted = async (key: string, n: number) => {
    let ok = 0;
    for (let i = 0; i < n; i++) {
      const { status } = await call(key);
      expect([200, 429]).toContain(status);
      if (status === 200) ok += 1;
    }
    return ok;
  };
  const flushAll = async () => {
    const client = fixture.redis.client();
    await client.flushall();
    client.disconnect();
  };
  test('the gateway warns at start that this Redis keeps nothing', async () => {
    const warnings = () =>
      fixture.stack.gateway.output.filter((line) => line.includes('"level":"warn"'));
    await waitFor(
      async () => warnings().some((line) => line.includes('keeps nothing on disk')) || undefined,
      { what: 'the persistence warning' },
    );
    // Its maxmemory-policy is the default, noeviction: nothing to say about it.
    expect(warnings().some((line) => line.includes('maxmemory-policy'))).toBe(false);
  });

  test('counters emptied mid-day: the key gets only what is left of its quota', async () => {
    const key = await registerKey(fixture.stack.gateway.url);
    expect(await admitted(key, 3)).toBe(3);
    await flushAll();
    const next = await call(key);
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-remaining')).toBe('1');
    expect(await admitted(key, 5)).toBe(1);
  });

  test('an outage, then Redis back empty: 5 admitted in all', async () => {
    const key = await registerKey(fixture.stack.gateway.url);
    let total = await admitted(key, 3);

    await fixture.redis.stop();
    total += await admitted(key, 5);

    await fixture.redis.restart();
    await waitFor(async () => ((await insuranceGauge()) === 0 ? true : undefined), {
      what: 'Redis recovery',
      timeoutMs: QUOTA_ON_REDIS_AGAIN_MS,
    });
    total += await admitted(key, 5);
    await flushAll();
    total += await admitted(key, 5);
    expect(total).toBe(5);
  }, 60_000);
});
