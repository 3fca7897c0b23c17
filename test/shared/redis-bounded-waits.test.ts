import type { Redis } from 'ioredis';
import {
  QUIT_TIMEOUT_MS,
  answersWithin,
  closeRedis,
  createRedis,
} from '../../services/shared/redis';
import { RedisServer } from '../support/redis-server';
import { waitFor } from '../support/ports';
import { within } from '../support/waits';

const ready = (redis: Redis) => new Promise((resolve) => redis.once('ready', resolve));

/**
 * The two waits on Redis at shutdown are bounded: whether it answers (a worker's close decides
 * between finishing its attempts and stopping at once) and the QUIT of a closing connection. A
 * stalled Redis keeps a connection `ready` (the socket is open), so only asking tells.
 */
describe('bounded waits on Redis', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(() => server.stop());

  test('answersWithin: true while Redis answers, false within its limit once it is stalled', async () => {
    // A worker's connection: no command timeout of its own, so only the bound stops the wait.
    const redis = createRedis(server.url, 'bounded-wait-test', { bullmq: 'worker' });
    redis.on('error', () => undefined);
    await ready(redis);
    try {
      expect(await answersWithin(redis, 500)).toBe(true);
      server.signal('SIGSTOP');
      try {
        expect(redis.status).toBe('ready');
        const bound = 300;
        const started = Date.now();
        expect(await answersWithin(redis, bound)).toBe(false);
        const elapsed = Date.now() - started;
        expect(elapsed).toBeGreaterThanOrEqual(bound - 10);
        expect(elapsed).toBeLessThan(within(bound));
      } finally {
        server.signal('SIGCONT');
      }
    } finally {
      redis.disconnect();
    }
  });

  test('answersWithin: false at once without a connection', async () => {
    const redis = createRedis(server.url, 'bounded-wait-test', { bullmq: 'worker' });
    redis.disconnect();
    const started = Date.now();
    // At once: not after the bound it was given, which is past what a busy machine may take.
    expect(await answersWithin(redis, 2 * within(0))).toBe(false);
    expect(Date.now() - started).toBeLessThan(within(0));
  });

  test('closeRedis: a stalled Redis is let go of after the QUIT timeout, not waited on', async () => {
    const redis = createRedis(server.url, 'bounded-wait-test', { bullmq: 'worker' });
    redis.on('error', () => undefined);
    await ready(redis);
    server.signal('SIGSTOP');
    try {
      const started = Date.now();
      await closeRedis(redis);
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(QUIT_TIMEOUT_MS - 10);
      expect(elapsed).toBeLessThan(within(QUIT_TIMEOUT_MS));
    } finally {
      server.signal('SIGCONT');
    }
    // Let go of for good: not connected again once Redis answers.
    await waitFor(async () => (redis.status === 'end' ? true : undefined), {
      what: 'the connection to end',
    });
  });
});
