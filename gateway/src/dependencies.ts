import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
} from 'rate-limiter-flexible';
import { createRegistry } from '../../services/shared/metrics';
import { type GatewayConfig, quotasFrom } from './config';
import { FileKeyStore } from './keys/file-key-store';
import { KeyCache } from './keys/key-cache';
import { publishKeyChange, subscribeKeyChanges } from './keys/key-events';
import type { KeyStore } from './keys/key-store';
import { MongoKeyStore } from './keys/mongo-key-store';
import { UnknownKeyLimiter } from './keys/unknown-key-limiter';
import { type GatewayMetrics, createGatewayMetrics } from './metrics';
import type { Clock } from './quota/daily-window';
import { QuotaLimiter } from './quota/quota-limiter';
import { createRedis } from './redis';

/** Everything the gateway app uses, built from configuration; server.ts and tests share it. */
export interface GatewayDependencies {
  keyStore: KeyStore;
  keyCache: KeyCache;
  unknownKeys: UnknownKeyLimiter;
  quota: QuotaLimiter;
  registrations: RateLimiterAbstract;
  announceKeyChange: (digest: string) => Promise<void>;
  registry: Registry;
  metrics: GatewayMetrics;
  close: () => Promise<void>;
}

export async function openKeyStore(
  config: Pick<GatewayConfig, 'MONGODB_URI' | 'MONGODB_DB' | 'DATA_DIR'>,
): Promise<KeyStore> {
  return config.MONGODB_URI
    ? MongoKeyStore.connect(config.MONGODB_URI, config.MONGODB_DB)
    : new FileKeyStore(config.DATA_DIR);
}

/** Logs and counts Redis state changes: a failure is news once, not once per request. */
function watchRedis(
  redis: Redis,
  name: string,
  logger: Logger,
  metrics: GatewayMetrics,
  primary: boolean,
): void {
  let healthy = true;
  redis.on('error', (err: Error) => {
    metrics.redisErrors.labels('connection').inc();
    if (healthy) logger.warn({ err: err.message, connection: name }, 'Redis unavailable');
    healthy = false;
    if (primary) metrics.insuranceActive.set(1);
  });
  redis.on('close', () => {
    if (primary) metrics.insuranceActive.set(1);
  });
  redis.on('ready', () => {
    if (!healthy) logger.info({ connection: name }, 'Redis available again');
    healthy = true;
    if (primary) metrics.insuranceActive.set(0);
  });
}

export async function createGatewayDependencies(
  config: GatewayConfig,
  { clock = Date.now, logger }: { clock?: Clock; logger: Logger },
): Promise<GatewayDependencies> {
  const registry = createRegistry('gateway');
  const metrics = createGatewayMetrics(registry);
  const keyStore = await openKeyStore(config);
  const redis = config.REDIS_URL ? createRedis(config.REDIS_URL, 'gateway') : undefined;
  const subscriber = config.REDIS_URL
    ? createRedis(config.REDIS_URL, 'gateway-keys', { subscriber: true })
    : undefined;

  const cacheHits = metrics.keyCacheLookups.labels('hit');
  const cacheMisses = metrics.keyCacheLookups.labels('miss');
  const keyCache = new KeyCache(keyStore, {
    // Without any change feed (MongoDB but no Redis), entries must expire within a second.
    ttlMs: redis || keyStore instanceof FileKeyStore ? config.KEY_CACHE_TTL_MS : 1_000,
    onLookup: (result) => (result === 'hit' ? cacheHits : cacheMisses).inc(),
  });
  if (keyStore instanceof FileKeyStore) keyStore.watch(() => keyCache.invalidate());
  if (subscriber) {
    watchRedis(subscriber, 'gateway-keys', logger, metrics, false);
    await subscribeKeyChanges(subscriber, (digest) => keyCache.invalidate(digest));
  }

  let insuranceLogged = false;
  const quota = new QuotaLimiter({
    quotas: quotasFrom(config),
    clock,
    redis,
    onInsurance: (tier) => {
      metrics.insuranceDecisions.labels(tier).inc();
      metrics.insuranceActive.set(1);
      if (!insuranceLogged)
        logger.warn('Redis not ready: quotas are kept in memory per replica until it returns');
      insuranceLogged = true;
    },
    onFailure: (err) => {
      metrics.redisErrors.labels('quota').inc();
      logger.error({ err }, 'quota check failed; request let through');
    },
  });
  if (redis) {
    watchRedis(redis, 'gateway', logger, metrics, true);
    redis.on('ready', () => {
      insuranceLogged = false;
    });
  }

  const registrationOptions = {
    points: config.REGISTRATIONS_PER_HOUR,
    duration: 3_600,
    keyPrefix: 'register',
  };
  const registrations = redis
    ? new RateLimiterRedis({
        ...registrationOptions,
        storeClient: redis,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory(registrationOptions),
      })
    : new RateLimiterMemory(registrationOptions);

  return {
    keyStore,
    keyCache,
    unknownKeys: new UnknownKeyLimiter(config.INVALID_KEYS_PER_MINUTE, clock),
    quota,
    registrations,
    announceKeyChange: async (digest) => {
      keyCache.invalidate(digest);
      if (redis) await publishKeyChange(redis, digest);
    },
    registry,
    metrics,
    close: async () => {
      await keyStore.close();
      await Promise.all([
        redis?.quit().catch(() => redis.disconnect()),
        subscriber?.quit().catch(() => subscriber.disconnect()),
      ]);
    },
  };
}
