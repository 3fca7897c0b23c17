import { RateLimiterRedis } from 'rate-limiter-flexible';
import { type RedisClient, redisConnector, writeBatcher } from '../services/shared/redis';
import { RedisCluster } from '../test/support/redis-cluster';
import { RedisServer } from '../test/support/redis-server';

/**
 * The quota's Redis call on one server and on a Redis Cluster of three masters, in this
 * process: `npx tsx bench/redis-cluster-quota.ts`. Each round keeps IN_FLIGHT quota calls
 * (RateLimiterRedis's script, as QuotaLimiter sends it) going over KEYS keys for ROUND_MS, and
 * reports calls per second and this process's CPU per call, as ratios to one server with the
 * writes batched per event-loop turn (what the gateway does) measured in the same round. It
 * shows what cluster mode costs the gateway and what batching per master saves there.
 */

const ROUND_MS = 4_000;
const ROUNDS = 3;
const IN_FLIGHT = 64;
const KEYS = 10_000;

interface Figures {
  callsPerSecond: number;
  cpuMicrosecondsPerCall: number;
}

async function measure(client: RedisClient, batch: () => void): Promise<Figures> {
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  const limiter = new RateLimiterRedis({
    storeClient: client,
    points: 1e9,
    duration: 86_400,
    keyPrefix: 'quota',
    rejectIfRedisNotReady: true,
  });
  let calls = 0;
  let running = true;
  const caller = async () => {
    while (running) {
      batch();
      await limiter.consume(`bench_${Math.floor(Math.random() * KEYS)}:2026-01-01`, 1);
      calls += 1;
    }
  };
  const run = async (ms: number) => {
    running = true;
    const callers = Array.from({ length: IN_FLIGHT }, caller);
    await new Promise((resolve) => setTimeout(resolve, ms));
    running = false;
    await Promise.all(callers);
  };
  await run(1_000); // warm-up: connections, scripts loaded
  calls = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await run(ROUND_MS);
  const used = process.cpuUsage(cpu);
  return {
    callsPerSecond: Math.round(calls / ((performance.now() - started) / 1000)),
    cpuMicrosecondsPerCall: Number(((used.user + used.system) / calls).toFixed(2)),
  };
}

async function main(): Promise<void> {
  const server = await RedisServer.start();
  const cluster = await RedisCluster.start({ masters: 3 });
  const single = redisConnector({ REDIS_URL: server.url })!.connect('bench', { hotPath: true });
  const sharded = redisConnector(cluster.settings)!.connect('bench', { hotPath: true });
  const unbatched = () => undefined;
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const reference = await measure(single, writeBatcher(single));
      const targets = {
        'one server, unbatched': await measure(single, unbatched),
        'cluster, batched per master': await measure(sharded, writeBatcher(sharded)),
        'cluster, unbatched': await measure(sharded, unbatched),
      };
      console.log(`round ${round}: one server, batched`, reference);
      for (const [name, figures] of Object.entries(targets)) {
        console.log(`round ${round}: ${name}`, {
          ...figures,
          callsVsReference: Number((figures.callsPerSecond / reference.callsPerSecond).toFixed(2)),
          cpuVsReference: Number(
            (figures.cpuMicrosecondsPerCall / reference.cpuMicrosecondsPerCall).toFixed(2),
          ),
        });
      }
    }
  } finally {
    single.disconnect();
    sharded.disconnect();
    await server.stop();
    await cluster.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
