import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { type RedisClient, dataNodes } from '../../../shared/redis';
import type { GatewayMetrics } from '../observability/metrics';
import type { QuotaEvents } from './quota-limiter';

/**
 * What the quota says about its Redis (docs/api.md#quotas-and-rate-limit-headers: "says so in its
 * logs and metrics"): one log line when it stops and when it starts asking Redis again, the state
 * as a gauge, and counts of failed commands and of decisions taken in memory.
 */
export function quotaEvents(logger: Logger, metrics: GatewayMetrics): QuotaEvents {
  const failedCommands = metrics.redisErrors.labels('quota');
  return {
    onInsurance: (tier) => metrics.insuranceDecisions.labels(tier).inc(),
    onRedisError: () => failedCommands.inc(),
    onRedisDown: (lastError) => {
      metrics.insuranceActive.set(1);
      logger.warn(
        { err: lastError instanceof Error ? lastError.message : String(lastError) },
        'Redis not answering: quotas are kept in memory per replica until it answers again',
      );
    },
    onRedisBack: () => {
      metrics.insuranceActive.set(0);
      logger.info('Redis answers again: quotas are shared by every replica again');
    },
  };
}

/**
 * Warns, once connected, when the Redis given for quotas can lose counters (docs/deploy.md,
 * "Redis for quotas"): no persistence, so a restart empties them, or an eviction policy that
 * may drop them. On a cluster every master is asked, and a warning names the node. Managed Redis
 * often disables CONFIG: then it says it could not check.
 */
export async function checkRedisForQuotas(redis: RedisClient, logger: Logger): Promise<void> {
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  const nodes = dataNodes(redis);
  await Promise.all(
    nodes.map((node) =>
      checkNode(
        node,
        nodes.length > 1 ? { node: `${node.options.host}:${node.options.port}` } : {},
        logger,
      ),
    ),
  );
}

async function checkNode(redis: Redis, where: { node?: string }, logger: Logger): Promise<void> {
  let appendonly, save, policy: string | undefined;
  // One name per CONFIG GET: Redis 6.2 takes no more. The reply is [name, value].
  const read = () =>
    Promise.all(
      ['appendonly', 'save', 'maxmemory-policy'].map(
        async (name) => ((await redis.config('GET', name)) as string[])[1],
      ),
    );
  try {
    // A refusal (a ReplyError) is final; a timeout on a busy start is worth two more tries.
    for (let attempt = 1; ; attempt++) {
      try {
        [appendonly, save, policy] = await read();
        break;
      } catch (err) {
        if ((err as Error).name === 'ReplyError' || attempt === 3) throw err;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  } catch (err) {
    logger.info(
      { ...where, err: err instanceof Error ? err.message : String(err) },
      'could not check Redis persistence and eviction (CONFIG GET refused): quotas need appendonly yes and maxmemory-policy noeviction',
    );
    return;
  }
  if (appendonly !== 'yes' && !save) {
    logger.warn(
      { ...where, appendonly, save },
      'Redis keeps nothing on disk: a restart empties every quota counter, and keys are held to their quota only by what each replica remembers (set appendonly yes)',
    );
  }
  if (policy !== 'noeviction') {
    logger.warn(
      { ...where, maxmemoryPolicy: policy },
      'Redis maxmemory-policy is not noeviction: under memory pressure it may drop quota counters',
    );
  }
}
