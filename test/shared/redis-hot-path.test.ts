import type { Redis } from 'ioredis';
import { COMMAND_TIMEOUT_MS, createRedis } from '../../services/shared/redis';
import { RedisServer } from '../support/redis-server';
import { within } from '../support/waits';

/** Resolves at the connection's next `ready`. */
const ready = (redis: Redis) => new Promise((resolve) => redis.once('ready', resolve));

/**
 * The quota's connection (`hotPath`) has no timer per command: ioredis's socket timeout drops the
 * connection when no reply has come for COMMAND_TIMEOUT_MS while commands wait, which fails the
 * waiting commands at once, and a Redis that answers slowly but answers keeps its connection, as
 * does one whose reply came while this process itself was held up.
 */
describe('a hot-path Redis connection bounds its commands by its socket timeout', () => {
  let server: RedisServer;
  let redis: Redis;
  let closes = 0;

  beforeAll(async () => {
    server = await RedisServer.start(['--enable-debug-command', 'yes']);
    redis = createRedis(server.url, 'hot-path-test', { hotPath: true });
    redis.on('error', () => undefined);
    redis.on('close', () => (closes += 1));
    await ready(redis);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });

  test('a stalled Redis: the waiting commands fail together after the timeout', async () => {
    await redis.set('stall-key', 'before');
    server.signal('SIGSTOP');
    try {
      const started = Date.now();
      const waiting = [redis.get('stall-key'), redis.get('stall-key'), redis.ping()];
      const outcomes = await Promise.allSettled(waiting);
      const elapsed = Date.now() - started;
      expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect(elapsed).toBeGreaterThanOrEqual(COMMAND_TIMEOUT_MS - 10);
      // Not sent again once reconnected: a command resent to the stalled Redis would wait for ever.
      expect(elapsed).toBeLessThan(within(COMMAND_TIMEOUT_MS));
      expect(closes).toBeGreaterThanOrEqual(1);
    } finally {
      server.signal('SIGCONT');
    }
    // Connected again in the background, with what Redis had before.
    if (redis.status !== 'ready') await ready(redis);
    expect(await redis.get('stall-key')).toBe('before');
  }, 20_000);

  test("a stall of this process, Redis's reply waiting in the socket: the command gets it", async () => {
    if (redis.status !== 'ready') await ready(redis);
    const before = closes;
    await redis.set('stall-key', 'kept');
    const reply = redis.get('stall-key');
    // This process held up past the timeout, as a long garbage collection or a starved CPU holds
    // it, while Redis answers at once: the timer is due before the reply is read.
    const until = Date.now() + 2 * COMMAND_TIMEOUT_MS;
    while (Date.now() < until);
    await expect(reply).resolves.toBe('kept');
    expect(closes).toBe(before);
  });

  test('a Redis slower than usual but answering keeps its connection', async () => {
    if (redis.status !== 'ready') await ready(redis);
    const before = closes;
    // Each reply comes after 300 ms, well within the timeout, three times in a row.
    for (let i = 0; i < 3; i++) expect(await redis.call('DEBUG', 'SLEEP', '0.3')).toBe('OK');
    expect(closes).toBe(before);
  }, 20_000);
});
