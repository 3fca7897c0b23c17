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
import { type GatewayMetrics, createGatewayMetrics } from './metrics';
import type { Clock } from './quota/daily-window';
import { QuotaLimiter } from './quota/quota-limiter';
import { checkRedisForQuotas, quotaEvents } from './quota/redis-watch';
import { createRedis, watchConnection } from './redis';

/** Everything the gateway app uses, built from configuration; server.ts and tests share it. */
export interface GatewayDependencies {
  keyStore: KeyStore;
  keyCache: KeyCache;
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
    watchConnection(subscriber, 'gateway-keys', logger, metrics);
    await subscribeKeyChanges(subscriber, (digest) => keyCache.invalidate(digest));
  }

  const quota = new QuotaLimiter({
    quotas: quotasFrom(config),
    clock,
    redis,
    ...quotaEvents(logger, metrics),
  });
  if (redis) {
    watchConnection(redis, 'gateway', logger, metrics);
    void checkRedisForQuotas(redis, logger);
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
    quota,
    registrations,
    announceKeyChange: async (digest) => {
      keyCache.invalidate(digest);
      if (redis) await publishKeyChange(redis, digest);
    },
    registry,
    metrics,
    close: async () => {
      quota.close();
      await keyStore.close();
      await Promise.all([
        redis?.quit().catch(() => redis.disconnect()),
        subscriber?.quit().catch(() => subscriber.disconnect()),
      ]);
    },
  };
}
