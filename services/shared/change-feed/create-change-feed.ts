import type { RedisClient } from '../redis';
import type { ChangeFeed } from './change-feed';
import { LocalChangeFeed } from './local-change-feed';
import { RedisChangeFeed } from './redis-change-feed';

/**
 * Redis pub/sub when the deployment has Redis (any number of replicas), else the local feed
 * under DATA_DIR (every process on this machine).
 */
export function createChangeFeed({
  dataDir,
  redis,
}: {
  dataDir: string;
  redis?:
    | { publisher: RedisClient; subscriber?: RedisClient | (() => RedisClient) | undefined }
    | undefined;
}): ChangeFeed {
  return redis
    ? new RedisChangeFeed(redis.publisher, redis.subscriber)
    : new LocalChangeFeed(dataDir);
}
