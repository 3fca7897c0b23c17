import type { Logger } from 'pino';
import type { ChangeFeed } from '../../../shared/change-feed/change-feed';
import { createChangeFeed } from '../../../shared/change-feed/create-change-feed';
import {
  type RedisClient,
  closeRedis,
  redisConnector,
  watchConnection,
} from '../../../shared/redis';
import type { RedisSettings } from '../../../shared/redis-config';
import type { CatalogConfig } from '../config';
import type { CatalogStore } from '../store/catalog-store';
import { CatalogChanges } from './catalog-changes';

/**
 * How often every replica asks the store for its version besides the feed: a change whose
 * announcement never came (a CLI killed after its commit, Redis down, MongoDB with no Redis) is
 * still served within a second. Asking costs one indexed read.
 */
export const VERSION_POLL_MS = 500;

export interface CatalogChangesWiring {
  feed: ChangeFeed;
  /** The Redis connection of the feed, when there is one, for others to share. */
  redis: RedisClient | undefined;
  service: CatalogChanges;
  close(): Promise<void>;
}

/**
 * The change feed of this deployment (Redis, else the local feed under DATA_DIR) and the operator
 * change service on it. This process follows the catalog's version on it once startWatchers runs.
 * (The catalog CLI makes its changes on a feed of its own: commandLineChangeFeed.)
 */
export function openCatalogChanges(
  config: Pick<CatalogConfig, 'DATA_DIR'> & RedisSettings,
  store: CatalogStore,
  logger: Logger,
): CatalogChangesWiring {
  // Commands wait while the connection is made: an admin change may come right after start.
  const connector = redisConnector(config);
  const redis = connector?.connect('catalog', { queueWhileDisconnected: true });
  if (redis) watchConnection(redis, 'catalog', logger);
  const feed = createChangeFeed({
    dataDir: config.DATA_DIR,
    redis: redis && {
      publisher: redis,
      subscriber: () => connector!.connect('catalog-changes', { queueWhileDisconnected: true }),
    },
  });
  return {
    feed,
    redis,
    service: new CatalogChanges(store, feed),
    close: async () => {
      await feed.close();
      if (redis) await closeRedis(redis);
    },
  };
}
