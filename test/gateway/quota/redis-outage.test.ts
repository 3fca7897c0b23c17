import { waitFor } from '../../support/ports';
import { redisStack } from '../../support/redis-stack';
import { registerKey } from '../../support/services';
import { QUOTA_ON_REDIS_AGAIN_MS } from '../../support/waits';

/**
 * docs/api.md#quotas-and-rate-limit-headers: a Redis outage is never a 5xx; the gateway recovers
 * without a restart.
 */
describe('Redis killed mid-test', () => {
  const fixture = redisStack();
  let key: string;

  beforeAll(async () => {
    key = await registerKey(fixture.stack.gateway.url);
  });

  const statuses = (n: number) =>
    Promise.all(Array.from({ length: n }, async () => (await fixture.call(key)).status));

  test('keeps serving on the insurance limiter, then returns to Redis', async () => {
    const { redis, stack } = fixture;
    expect(await statuses(5)).toEqual(Array(5).fill(200));
    expect(await fixture.insuranceGauge()).toBe(0);

    await redis.stop();
    expect(await statuses(10)).toEqual(Array(10).fill(200));
    const metrics = await stack.gateway.metrics();
    expect(metrics).toMatch(
      /^gateway_quota_insurance_decisions_total\{tier="free",service="gateway"\} [1-9]/m,
    );
    expect(await fixture.insuranceGauge()).toBe(1);
    // Log lines leave in batches: the line may follow the gauge by a moment.
    await waitFor(
      async () =>
        stack.gateway.output.some((line) => line.includes('quotas are kept in memory')) ||
        undefined,
      { what: 'the insurance log line' },
    );

    await redis.restart();
    await waitFor(async () => ((await fixture.insuranceGauge()) === 0 ? true : undefined), {
      what: 'Redis recovery',
      timeoutMs: QUOTA_ON_REDIS_AGAIN_MS,
    });
    expect(await statuses(5)).toEqual(Array(5).fill(200));
    const client = redis.client();
    const counters = await client.keys('quota:*');
    expect(counters).toHaveLength(1);
    expect(Number(await client.get(counters[0]!))).toBe(5);
    client.disconnect();
  });
});
