import type { Logger } from 'pino';
import { followCatalogVersion } from './proxy/cache/follow-catalog-version';
import type { GatewayConfig } from './config';
import type { GatewayDependencies } from './dependencies';
import { followKeyChanges } from './keys/follow-key-changes';
import { watchForLostCounters } from './quota/lost-counters-watch';
import { checkRedisForQuotas } from './quota/redis-watch';

/**
 * Starts everything that keeps the gateway's dependencies current in the background: the key
 * cache following key changes, the last-use writes, the search analytics' writes, the response cache following the catalog's
 * version, the watch for lost quota counters and the one check of Redis's persistence. Returns
 * one function that stops them all; call it before `deps.close()`, since they use what it closes
 * (the last-use writes flush to the key store as they stop).
 */
export async function startWatchers(
  deps: GatewayDependencies,
  { config, logger }: { config: Pick<GatewayConfig, 'INTERNAL_TOKEN'>; logger: Logger },
): Promise<() => Promise<void>> {
  const { keyStore, changes, metrics, redis } = deps;
  const unfollowKeys = await followKeyChanges(deps.keyCache, {
    feed: changes,
    store: keyStore,
    logger,
  });
  const stopLastUse = deps.lastUse.follow(keyStore, {
    logger,
    onWritten: (keys) => metrics.lastUseWrites.inc(keys),
  });
  const unfollowCatalog = deps.responseCache
    ? await followCatalogVersion(deps.responseCache, {
        feed: changes,
        catalog: deps.catalog,
        internalToken: config.INTERNAL_TOKEN,
        logger,
      })
    : undefined;
  const unwatchCounters = redis
    ? watchForLostCounters(redis, {
        clock: deps.clock,
        logger,
        onLost: (evidence) => metrics.lostCounters.labels(evidence).inc(),
      })
    : undefined;
  if (redis) void checkRedisForQuotas(redis, logger);
  deps.searchRecorder?.start();

  return async () => {
    unfollowKeys();
    await stopLastUse();
    // What was counted since the last write is written as it stops.
    await deps.searchRecorder?.close();
    unfollowCatalog?.();
    unwatchCounters?.();
  };
}
