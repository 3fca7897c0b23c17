import { RedisServer } from '../support/redis-server';
import { waitFor } from '../support/ports';
import { registerKey, startStack } from '../support/services';

type Stack = Awaited<ReturnType<typeof startStack>>;

/** ioredis's command timeout in gateway/src/redis.ts. */
const COMMAND_TIMEOUT_MS = 500;

/**
 * SPEC B4 when Redis stalls (SIGSTOP: the connection stays open, commands time out): after a
 * few timeouts the gateway stops asking Redis and answers from memory at once, and it goes back
 * to Redis, and says so, when Redis answers again.
 */
describe('Redis stalled mid-test', () => {
  let redis: RedisServer;
  let stack: Stack;
  let key: string;

  beforeAll(async () => {
    redis = await RedisServer.start();
    stack = await startStack({ REDIS_URL: redis.url });
    key = await registerKey(stack.gateway.url);
  });

  afterAll(async () => {
    redis.signal('SIGCONT');
    await stack.stop();
    await redis.stop();
  });

  const call = async () => {
    const response = await fetch(`${stack.gateway.url}/v1/tools?limit=1`, {
      headers: { 'x-api-key': key },
    });
    await response.arrayBuffer();
    return response;
  };
  const insuranceGauge = async () =>
    Number(
      (await stack.gateway.metrics()).match(/^gateway_quota_insurance_active\{[^}]*\} (\d+)/m)?.[1],
    );
  /** Quota script calls Redis has executed. */
  const evalshaCalls = async () => {
    const client = redis.client();
    const stats = await client.info('commandstats');
    client.disconnect();
    return Number(stats.match(/^cmdstat_evalsha:calls=(\d+)/m)?.[1] ?? 0);
  };

  test('answers from memory at once while Redis is stopped, and returns to Redis after', async () => {
    for (let i = 0; i < 3; i++) expect((await call()).status).toBe(200);
    expect(await insuranceGauge()).toBe(0);
    const callsBefore = await evalshaCalls();

    redis.signal('SIGSTOP');
    // Until the gateway gives up on Redis, each request waits for the command timeout.
    let untilOpen = 0;
    await waitFor(
      async () => {
        expect((await call()).status).toBe(200);
        untilOpen += 1;
        return (await insuranceGauge()) === 1 ? true : undefined;
      },
      { what: 'insurance mode', timeoutMs: 20_000, intervalMs: 0 },
    );

    const started = Date.now();
    const remaining: number[] = [];
    for (let i = 0; i < 50; i++) {
      const response = await call();
      expect(response.status).toBe(200);
      expect(response.headers.get('x-ratelimit-limit')).toBe('100');
      remaining.push(Number(response.headers.get('x-ratelimit-remaining')));
    }
    // Generous: half of what 50 command timeouts would take.
    expect(Date.now() - started).toBeLessThan((50 * COMMAND_TIMEOUT_MS) / 2);
    // The replica's own count goes on from what it admitted before the stall.
    const admittedBefore = 3 + untilOpen;
    expect(remaining).toEqual(Array.from({ length: 50 }, (_, i) => 100 - admittedBefore - i - 1));

    redis.signal('SIGCONT');
    await waitFor(async () => ((await insuranceGauge()) === 0 ? true : undefined), {
      what: 'the gauge back to 0',
      timeoutMs: 15_000,
    });
    expect(stack.gateway.output.some((line) => line.includes('Redis answers again'))).toBe(true);
    // Redis ran what was sent before the gateway gave up on it, and none of the 50.
    const callsDuringStall = (await evalshaCalls()) - callsBefore;
    expect(callsDuringStall).toBeLessThanOrEqual(untilOpen);

    // Back on Redis; the replica's count (all it admitted today) wins over Redis's lower one.
    const back = await call();
    expect(back.status).toBe(200);
    expect(back.headers.get('x-ratelimit-remaining')).toBe(String(100 - admittedBefore - 50 - 1));
    expect((await evalshaCalls()) - callsBefore).toBe(callsDuringStall + 1);
  }, 120_000);
});
