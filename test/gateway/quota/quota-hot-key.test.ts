import type { Redis } from 'ioredis';
import {
  QuotaLimiter,
  type QuotaDecision,
} from '../../../services/gateway/src/quota/quota-limiter';
import { createRedis } from '../../../services/shared/redis';
import { RedisServer, closeClient } from '../../support/redis-server';

const NOON = Date.parse('2026-05-01T12:00:00Z');
const COUNTER = (keyId: string) => `quota:${keyId}:2026-05-01`;

/**
 * The quota script calls Redis has run so far (EVAL the first time on a connection, then EVALSHA).
 */
async function scriptCalls(client: Redis): Promise<number> {
  const stats = await client.info('commandstats');
  return [...stats.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)].reduce(
    (sum, [, calls]) => sum + Number(calls),
    0,
  );
}

/**
 * A hot key: the requests of one key read in one event-loop turn are counted by one `INCRBY n`,
 * each still numbered exactly, on one replica and across replicas sharing Redis.
 */
describe('quota of a hot key on Redis', () => {
  let server: RedisServer;
  let admin: Redis;
  const clients: Redis[] = [];
  const limiters: QuotaLimiter[] = [];

  /** A replica's quota limiter on its own connection, as each gateway process has. */
  async function replica(free: number): Promise<QuotaLimiter> {
    const redis = createRedis(server.url, 'hot-key-test', { hotPath: true });
    clients.push(redis);
    await new Promise((resolve) => redis.once('ready', resolve));
    const limiter = new QuotaLimiter({
      quotas: { free, pro: 1_000, enterprise: 10_000 },
      clock: () => NOON,
      redis,
    });
    limiters.push(limiter);
    return limiter;
  }

  /** `n` requests of `keyId` taken in one event-loop turn. */
  const turn = (limiter: QuotaLimiter, keyId: string, n: number) =>
    Promise.all(Array.from({ length: n }, () => limiter.consume(keyId, 'free')));

  const allowed = (decisions: QuotaDecision[]) => decisions.filter((d) => d.allowed).length;

  beforeAll(async () => {
    server = await RedisServer.start();
    admin = server.client();
  });
  afterAll(async () => {
    for (const limiter of limiters) limiter.close();
    await Promise.all([...clients, admin].map(closeClient));
    await server.stop();
  });

  test('eight requests of one key in one turn: one command, each its own unit', async () => {
    const limiter = await replica(100);
    const before = await scriptCalls(admin);
    const decisions = await turn(limiter, 'key_hot', 8);
    expect(await scriptCalls(admin)).toBe(before + 1);
    expect(decisions.map((d) => d.remaining)).toEqual([99, 98, 97, 96, 95, 94, 93, 92]);
    expect(allowed(decisions)).toBe(8);
    expect(await admin.get(COUNTER('key_hot'))).toBe('8');
  });

  test('a turn that crosses the limit admits exactly up to it and gives the rest back', async () => {
    const limiter = await replica(5);
    const decisions = await turn(limiter, 'key_at_limit', 8);
    expect(decisions.map((d) => d.allowed)).toEqual([
      ...Array<boolean>(5).fill(true),
      ...Array<boolean>(3).fill(false),
    ]);
    expect(decisions.map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0, 0, 0, 0]);
    // A refused request uses nothing: the counter holds what was admitted.
    expect(await admin.get(COUNTER('key_at_limit'))).toBe('5');
    // Exhausted now: refused by this replica's own count, without a command.
    const before = await scriptCalls(admin);
    expect(allowed(await turn(limiter, 'key_at_limit', 4))).toBe(0);
    expect(await scriptCalls(admin)).toBe(before);
  });

  test('two replicas, many turns in flight at once: exactly the quota admitted', async () => {
    const [a, b] = [await replica(100), await replica(100)];
    const before = await scriptCalls(admin);
    // 12 turns of 20 requests, 6 on each replica, each sent in an event-loop turn of its own
    // without waiting for the earlier ones' replies: 240 asked of 100.
    const turns: Promise<QuotaDecision[]>[] = [];
    for (let i = 0; i < 12; i++) {
      turns.push(turn(i % 2 ? b : a, 'key_shared', 20));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const decisions = (await Promise.all(turns)).flat();
    expect(allowed(decisions)).toBe(100);
    // Every unit from 1 to 100 was handed out exactly once.
    const units = decisions.filter((d) => d.allowed).map((d) => 100 - d.remaining);
    expect(new Set(units).size).toBe(100);
    expect(Math.min(...units)).toBe(1);
    expect(Math.max(...units)).toBe(100);
    expect(await admin.get(COUNTER('key_shared'))).toBe('100');
    // Fewer commands than requests: one per key and turn, plus the give-backs past the limit.
    expect((await scriptCalls(admin)) - before).toBeLessThan(24);
  });

  test("a Redis that lost its counters: the turn is numbered from the replica's own count", async () => {
    const limiter = await replica(10);
    expect(allowed(await turn(limiter, 'key_lost', 6))).toBe(6);
    await admin.del(COUNTER('key_lost'));
    const decisions = await turn(limiter, 'key_lost', 8);
    expect(decisions.map((d) => d.remaining)).toEqual([3, 2, 1, 0, 0, 0, 0, 0]);
    expect(allowed(decisions)).toBe(4);
  });

  test('keys of one turn are counted apart: one command each', async () => {
    const limiter = await replica(100);
    const before = await scriptCalls(admin);
    const decisions = await Promise.all([
      ...Array.from({ length: 3 }, () => limiter.consume('key_one', 'free')),
      ...Array.from({ length: 2 }, () => limiter.consume('key_two', 'free')),
    ]);
    expect(decisions.map((d) => d.remaining)).toEqual([99, 98, 97, 99, 98]);
    expect(await scriptCalls(admin)).toBe(before + 2);
  });
});
