import type { Redis } from 'ioredis';
import { QuotaLimiter } from '../../services/gateway/src/quota/quota-limiter';
import { createRedis, inOneWrite } from '../../services/shared/redis';
import { RedisServer } from '../support/redis-server';

/**
 * How many writes the connection's socket hands to the kernel while `work` runs, counted at the
 * stream's own write functions: one `_write` per unbatched command, one `_writev` per batch.
 */
async function writesDuring(redis: Redis, work: () => Promise<void>): Promise<number> {
  const single = jest.spyOn(redis.stream, '_write');
  const vector = jest.spyOn(redis.stream, '_writev' as never);
  try {
    await work();
    return single.mock.calls.length + vector.mock.calls.length;
  } finally {
    single.mockRestore();
    vector.mockRestore();
  }
}

describe('commands sent together leave in one write (inOneWrite)', () => {
  let server: RedisServer;
  let redis: Redis;

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = createRedis(server.url, 'write-batch-test');
    await new Promise((resolve) => redis.once('ready', resolve));
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });

  test('ten commands sent inside it: one write, and each gets its own reply', async () => {
    const writes = await writesDuring(redis, async () => {
      let replies: Promise<number>[] = [];
      inOneWrite(redis, () => {
        replies = Array.from({ length: 10 }, () => redis.incr('batched'));
      });
      expect(await Promise.all(replies)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    });
    expect(writes).toBe(1);
  });

  test('without it the same ten commands take ten writes', async () => {
    const writes = await writesDuring(redis, async () => {
      await Promise.all(Array.from({ length: 10 }, () => redis.incr('unbatched')));
    });
    expect(writes).toBe(10);
  });

  test('nothing is held past it: a command awaited before the next is sent gets its reply', async () => {
    const writes = await writesDuring(redis, async () => {
      for (let i = 1; i <= 3; i++) {
        let reply: Promise<number> | undefined;
        inOneWrite(redis, () => (reply = redis.incr('one-by-one')));
        expect(await reply).toBe(i);
      }
    });
    expect(writes).toBe(3);
  });

  test('the quota limiter sends the commands of one turn in one write, one per key', async () => {
    const quota = new QuotaLimiter({
      quotas: { free: 100, pro: 100, enterprise: 100 },
      clock: () => Date.parse('2026-05-01T12:00:00Z'),
      redis,
    });
    try {
      const writes = await writesDuring(redis, async () => {
        const decisions = await Promise.all(
          Array.from({ length: 8 }, (_, i) => quota.consume(`key_${i}`, 'free')),
        );
        expect(decisions.every((d) => d.allowed && d.remaining === 99)).toBe(true);
      });
      expect(writes).toBe(1);
    } finally {
      quota.close();
    }
  });
});

test('before its first connection a client is left alone: the command fails as it would', async () => {
  // Nothing listens there; the client has no socket yet when the command is sent.
  const redis = createRedis('redis://127.0.0.1:1', 'write-batch-unconnected');
  redis.on('error', () => undefined);
  try {
    let reply: Promise<number> | undefined;
    expect(() => inOneWrite(redis, () => (reply = redis.incr('never')))).not.toThrow();
    await expect(reply).rejects.toThrow();
  } finally {
    redis.disconnect();
  }
});
