import type Provider from 'oidc-provider';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { StorageSpace } from '../../shared/embedded/storage-space';
import { createRegistry } from '../../shared/metrics';
import { ResponseCache } from './proxy/cache/response-cache';
import { type GatewayConfig, quotasFrom } from './config';
import type { ChangeFeed } from '../../shared/change-feed/change-feed';
import { createChangeFeed } from '../../shared/change-feed/create-change-feed';
import { EmbeddedKeyStore } from './keys/embedded-key-store';
import { KeyCache } from './keys/key-cache';
import { announceKeyChange } from './keys/key-change';
import type { KeyRecord, KeyStore } from './keys/key-store';
import { MongoKeyStore } from './keys/mongo-key-store';
import { UnknownKeyLimiter } from './keys/unknown-key-limiter';
import {
  type GatewayMetrics,
  createGatewayMetrics,
  registerResponseCacheSize,
} from './observability/metrics';
import type { Clock } from './quota/daily-window';
import { QuotaLimiter } from './quota/quota-limiter';
import { QuotaWarnings } from './quota/quota-warning';
import {
  type RedisClient,
  closeRedis,
  firstConnection,
  redisConnector,
  watchConnection,
} from '../../shared/redis';
import { quotaEvents } from './quota/redis-watch';
import { CatalogClient } from './proxy/catalog-client';
import { ScanningKeys } from './leaks/scanning-keys';
import { LastUse } from './keys/last-use';
import { SearchRecorder } from './analytics/search-recorder';
import { secretState } from './keys/secret-lifecycle';
import { AccessTokens } from './oauth/access-tokens';
import { createAuthorizationServer, protectedResources } from './oauth/authorization-server';

/**
 * Everything the gateway app uses, built from configuration and started by nothing: server.ts and
 * tests build these, start the watchers that keep them current (startWatchers) and build the app.
 */
export interface GatewayDependencies {
  keyStore: KeyStore;
  keyCache: KeyCache;
  unknownKeys: UnknownKeyLimiter;
  changes: ChangeFeed;
  quota: QuotaLimiter;
  /** Hands `quota.warning` webhooks to the catalog. */
  quotaWarnings: QuotaWarnings;
  /** The secret-scanning providers' keys; undefined when SECRET_SCANNING_PUBLIC_KEYS is unset. */
  scanningKeys: ScanningKeys | undefined;
  catalog: CatalogClient;
  /** Undefined when RESPONSE_CACHE=off. */
  responseCache: ResponseCache | undefined;
  /** Each key's last use, noted per request and written at most once a minute. */
  lastUse: LastUse;
  /** The MCP endpoint's OAuth authorization server and the access tokens it issued. */
  oauth: { provider: Provider; tokens: AccessTokens };
  /** Counts searches for the analytics; undefined when SEARCH_ANALYTICS=off. */
  searchRecorder: SearchRecorder | undefined;
  /** Applies a stored key change here at once and announces it to every process. */
  announceKeyChange: (record: KeyRecord) => Promise<void>;
  registry: Registry;
  metrics: GatewayMetrics;
  /** Whether writes under DATA_DIR can succeed (a full disk), for readiness. */
  storage: StorageSpace;
  /** The quota's Redis connection; undefined without Redis (quotas in memory). */
  redis: RedisClient | undefined;
  /** The clock everything here counts days and minutes by (tests set their own). */
  clock: Clock;
  /** Closes what was built here; the watchers' stop function runs first. */
  close: () => Promise<void>;
}

export async function openKeyStore(
  config: Pick<GatewayConfig, 'MONGODB_URI' | 'MONGODB_DB' | 'DATA_DIR'>,
): Promise<KeyStore> {
  return config.MONGODB_URI
    ? MongoKeyStore.connect(config.MONGODB_URI, config.MONGODB_DB)
    : new EmbeddedKeyStore(config.DATA_DIR);
}

export async function createGatewayDependencies(
  config: GatewayConfig,
  { clock = Date.now, logger }: { clock?: Clock; logger: Logger },
): Promise<GatewayDependencies> {
  const registry = createRegistry('gateway');
  const metrics = createGatewayMetrics(registry);
  const keyStore = await openKeyStore(config);
  const { redis, subscriber } = connectRedis(config, { logger, metrics });
  // Its first requests are counted on Redis, not by this replica alone while it connects.
  if (redis) await firstConnection(redis);
  const changes = createChangeFeed({
    dataDir: config.DATA_DIR,
    redis: redis && subscriber ? { publisher: redis, subscriber } : undefined,
  });

  const cacheHits = metrics.keyCacheLookups.labels('hit');
  const cacheMisses = metrics.keyCacheLookups.labels('miss');
  const keyCache = new KeyCache(keyStore, {
    ttlMs: config.KEY_CACHE_TTL_MS,
    onLookup: (result) => (result === 'hit' ? cacheHits : cacheMisses).inc(),
  });
  const catalog = new CatalogClient({
    catalogUrl: config.CATALOG_URL,
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
    onRetry: (reason) => metrics.upstreamRetries.labels(reason).inc(),
  });
  const quota = new QuotaLimiter({
    quotas: quotasFrom(config),
    clock,
    redis,
    ...quotaEvents(logger, metrics),
  });
  const issuer = config.PUBLIC_URL.replace(/\/$/, '');
  const resources = protectedResources(issuer);
  const oauth = {
    provider: await createAuthorizationServer({
      issuer,
      store: keyStore.oauth,
      // A grant acts for a secret: it ends when the secret does.
      secretWorks: async (digest) => {
        const match = await keyCache.lookup(digest);
        return match !== null && secretState(match, digest, Date.now()).kind !== 'ended';
      },
      allowPrivateClientMetadata: config.OAUTH_CLIENT_METADATA_ALLOW_PRIVATE,
    }),
    tokens: new AccessTokens(keyStore.oauth, [resources.mcp, resources.api]),
  };
  const quotaWarnings = new QuotaWarnings({
    catalog,
    internalToken: config.INTERNAL_TOKEN,
    clock,
    logger,
  });

  return {
    keyStore,
    keyCache,
    unknownKeys: new UnknownKeyLimiter(config.INVALID_KEYS_PER_MINUTE, clock),
    changes,
    quota,
    quotaWarnings,
    lastUse: new LastUse(clock),
    oauth,
    searchRecorder:
      config.SEARCH_ANALYTICS === 'on'
        ? new SearchRecorder({
            store: keyStore.searches,
            flushMs: config.SEARCH_ANALYTICS_FLUSH_MS,
            clock,
            logger,
            onDropped: (searches) => metrics.searchAnalyticsDropped.inc(searches),
          })
        : undefined,
    scanningKeys: config.SECRET_SCANNING_PUBLIC_KEYS
      ? new ScanningKeys(config.SECRET_SCANNING_PUBLIC_KEYS, clock)
      : undefined,
    catalog,
    responseCache: openResponseCache(config, { registry, metrics }),
    announceKeyChange: async (record) => {
      keyCache.invalidate(record.digest);
      keyCache.invalidateKey(record.id);
      await announceKeyChange(changes, record);
    },
    registry,
    metrics,
    storage: new StorageSpace(config.DATA_DIR),
    redis,
    clock,
    close: async () => {
      quota.close();
      await catalog.close();
      await quotaWarnings.close();
      await keyStore.close();
      await changes.close();
      if (redis) await closeRedis(redis);
    },
  };
}

/**
 * The quota's connection and the key feed's subscriber, each watched from the moment it is made:
 * its errors are logged and counted, never left to ioredis's unhandled-error output.
 */
function connectRedis(
  config: GatewayConfig,
  { logger, metrics }: { logger: Logger; metrics: GatewayMetrics },
): { redis: RedisClient | undefined; subscriber: RedisClient | undefined } {
  const connector = redisConnector(config);
  if (!connector) return { redis: undefined, subscriber: undefined };
  const countConnectionError = () => metrics.redisErrors.labels('connection').inc();
  const redis = connector.connect('gateway', { hotPath: true });
  const subscriber = connector.connect('gateway-keys', { queueWhileDisconnected: true });
  watchConnection(subscriber, 'gateway-keys', logger, countConnectionError);
  watchConnection(redis, 'gateway', logger, countConnectionError);
  return { redis, subscriber };
}

/**
 * Entries past this age are not served: a net under the two ways the cache follows the catalog's
 * version (followCatalogVersion).
 */
const CACHE_TTL_MS = 60_000;
/** A bigger answer (a large export page) is relayed, never kept. */
const MAX_ENTRY_BYTES = 1024 * 1024;

function openResponseCache(
  config: GatewayConfig,
  { registry, metrics }: { registry: Registry; metrics: GatewayMetrics },
): ResponseCache | undefined {
  if (config.RESPONSE_CACHE === 'off' || config.RESPONSE_CACHE_MAX_BYTES === 0) return undefined;
  const evictions = metrics.responseCacheEvictions;
  const cache = new ResponseCache({
    maxBytes: config.RESPONSE_CACHE_MAX_BYTES,
    maxEntryBytes: Math.min(MAX_ENTRY_BYTES, config.RESPONSE_CACHE_MAX_BYTES),
    ttlMs: CACHE_TTL_MS,
    onEvict: () => evictions.inc(),
  });
  registerResponseCacheSize(registry, cache);
  return cache;
}
