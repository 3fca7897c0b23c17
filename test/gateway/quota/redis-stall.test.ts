import { COMMAND_TIMEOUT_MS } from '../../../services/shared/redis';
import { waitFor } from '../../support/ports';
import { redisStack } from '../../support/redis-stack';
import { registerKey } from '../../support/services';
import { LOG_FLUSH_MS, REDIS_CIRCUIT_MAX_BACKOFF_MS, within } from '../../support/waits';

/**
 * docs/api.md#quotas-and-rate-limit-headers when Redis stalls (SIGSTOP: the connection stays open,
 * commands time out): after a few timeouts the gateway stops asking Redis and answers from memory
 * at once, and it goes back to Redis, and says so, when Redis answers again.
 */
describe('Redis stalled mid-test', () => {
  const fixture = redisStack();
  const { insuranceGauge } = fixture;
  let key: string;

  beforeAll(async () => {
    key = await registerKey(fixture.stack.gateway.url);
  });

  const call = () => fixture.call(key);
  /**
   * Quota script calls Redis has executed: EVALSHA, and EVAL for the first call on a connection
   * (the gateway drops a stalled connection and makes a new one).
   */
  const evalshaCalls = async () => {
    const client = fixture.redis.client();
    const stats = await client.info('commandstats');
    client.disconnect();
    const calls = (name: string) =>
      Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
    return calls('evalsha') + calls('eval');
  };

  test('answers from memory at once while Redis is stopped, and returns to Redis after', async () => {
    const { redis, stack } = fixture;
    for (let i = 0; i < 3; i++) expect((await call()).status).toBe(200);
    expect(await insuranceGauge()).toBe(0);
    const callsBefore = await evalshaCalls();

    redis.signal('SIGSTOP');
    // Until the gateway gives up on Redis, a request may wait for the command timeout.
    let untilOpen = 0;
    while ((await insuranceGauge()) !== 1) {
      expect((await call()).status).toBe(200);
      untilOpen += 1;
      expect(untilOpen).toBeLessThan(20);
    }

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
    // The circuit's next probe sees Redis answer.
    await waitFor(async () => ((await insuranceGauge()) === 0 ? true : undefined), {
      what: 'the gauge back to 0',
      timeoutMs: within(REDIS_CIRCUIT_MAX_BACKOFF_MS),
    });
    // An info line: written with the next batch of log lines, within a second.
    await waitFor(
      async () =>
        stack.gateway.output.some((line) => line.includes('Redis answers again')) || undefined,
      { what: 'the "Redis answers again" log line', timeoutMs: within(LOG_FLUSH_MS) },
    );
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
