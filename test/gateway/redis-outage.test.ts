import { RedisServer } from '../support/redis-server';
import { waitFor } from '../support/ports';
import { registerKey, startStack } from '../support/services';

type Stack = Awaited<ReturnType<typeof startStack>>;

/** SPEC B4: a Redis outage is never a 5xx; the gateway recovers without a restart. */
describe('Redis killed mid-test', () => {
  let redis: RedisServer;
  let stack: Stack;
  let key: string;

  beforeAll(async () => {
    redis = await RedisServer.start();
    stack = await startStack({ REDIS_URL: redis.url });
    key = await registerKey(stack.gateway.url);
  });

  afterAll(async () => {
    await stack.stop();
    await redis.stop();
  });

  const statuses = (n: number) =>
    Promise.all(
      Array.from({ length: n }, async () => {
        const response = await fetch(`${stack.gateway.url}/v1/tools?limit=1`, {
          headers: { 'x-api-key': key },
        });
        await response.arrayBuffer();
        return response.status;
      }),
    );
  const insuranceGauge = async () =>
    Number(
      (await stack.gateway.metrics()).match(/^gateway_quota_insurance_active\{[^}]*\} (\d+)/m)?.[1],
    );

  test('keeps serving on the insurance limiter, then returns to Redis', async () => {
    expect(await statuses(5)).toEqual(Array(5).fill(200));
    expect(await insuranceGauge()).toBe(0);

    await redis.stop();
    expect(await statuses(10)).toEqual(Array(10).fill(200));
    const metrics = await stack.gateway.metrics();
    expect(metrics).toMatch(
      /^gateway_quota_insurance_decisions_total\{tier="free",service="gateway"\} [1-9]/m,
    );
    expect(await insuranceGauge()).toBe(1);
    expect(stack.gateway.output.some((line) => line.includes('quotas are kept in memory'))).toBe(
      true,
    );

    await redis.restart();
    await waitFor(async () => ((await insuranceGauge()) === 0 ? true : undefined), {
      what: 'Redis recovery',
    });
    expect(await statuses(5)).toEqual(Array(5).fill(200));
    const client = redis.client();
    const counters = await client.keys('quota:*');
    expect(counters).toHaveLength(1);
    expect(Number(await client.get(counters[0]!))).toBe(5);
    client.disconnect();
  });
});
