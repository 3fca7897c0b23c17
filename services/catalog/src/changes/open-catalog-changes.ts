import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ChangeFeed } from '../../../shared/change-feed/change-feed';
import { createChangeFeed } from '../../../shared/change-feed/create-change-feed';
import { createRedis, watchConnection } from '../../../shared/redis';
import type { CatalogConfig } from '../config';
import type { CatalogStore } from '../store/catalog-store';
import { CatalogChanges } from './catalog-changes';
import { followCatalogChanges } from './catalog-follower';

/** The feed reaches every replica: a slow poll is only a safety net. */
const SAFETY_POLL_MS = 5_000;
/** MongoDB without Redis: polling the version is how other replicas' changes arrive (SPEC B9). */
const MONGODB_WITHOUT_FEED_POLL_MS = 250;

export interface CatalogChangesWiring {
  feed: ChangeFeed;
  /** The Redis connection of the feed, when there is one, for others to share. */
  redis: Redis | undefined;
  service: CatalogChanges;
  close(): Promise<void>;
}

/**
 * The change feed of this deployment (Redis, else the local feed under DATA_DIR), the operator
 * change service on it, and this process following the catalog's version.
 */
export async function openCatalogChanges(
  config: Pick<CatalogConfig, 'REDIS_URL' | 'DATA_DIR'>,
  store: CatalogStore,
  logger: Logger,
): Promise<CatalogChangesWiring> {
  // Commands wait while the connection is made: a CLI announces its change right after start.
  const redis = config.REDIS_URL
    ? createRedis(config.REDIS_URL, 'catalog', { queueWhileDisconnected: true })
    : undefined;
  if (redis) watchConnection(redis, 'catalog', logger);
  const feed = createChangeFeed({ dataDir: config.DATA_DIR, redis: redis && { publisher: redis } });
  const unfollow = await followCatalogChanges(store, feed, {
    pollMs:
      feed.kind === 'local' && store.kind === 'mongodb'
        ? MONGODB_WITHOUT_FEED_POLL_MS
        : SAFETY_POLL_MS,
    logger,
  });
  return {
    feed,
    redis,
    service: new CatalogChanges(store, feed),
    close: async () => {
      unfollow();
      await feed.close();
      await redis?.quit().catch(() => redis.disconnect());
    },
  };
}
