import { type RedisClient, redisConnector } from '../redis';
import type { RedisSettings } from '../redis-config';
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

/**
 * The change feed of a command-line run, which announces the change it stored and exits, on a
 * Redis connection of its own (`name`). Every process also reads a stored change from the store
 * within `deadlineMs` (its poll of the store), so an announcement that has not gone out by then
 * hastens nothing: publishing gives up at that deadline, counted from the first publish, instead
 * of holding the run's result. A failure names what the connection met (a refused connection),
 * not how ioredis gave up; nothing is logged, the run reports it. Closing ends the connection at
 * once. Without Redis, the local feed under DATA_DIR.
 */
export function commandLineChangeFeed(
  settings: RedisSettings & { DATA_DIR: string },
  name: string,
  deadlineMs: number,
): ChangeFeed {
  const redis = redisConnector(settings)?.connect(name, { commandLine: true });
  if (!redis) return new LocalChangeFeed(settings.DATA_DIR);
  let connectionError: Error | undefined;
  redis.on('error', (err: Error) => (connectionError = err));
  const feed = new RedisChangeFeed(redis);
  let deadline: number | undefined;
  return {
    kind: feed.kind,
    publish: async (topic, message) => {
      deadline ??= Date.now() + deadlineMs;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`Redis did not answer within ${deadlineMs} ms`)),
          deadline! - Date.now(),
        );
      });
      try {
        await Promise.race([feed.publish(topic, message), late]);
      } catch (err) {
        throw connectionError ?? err;
      } finally {
        clearTimeout(timer);
      }
    },
    subscribe: (topic, listener) => feed.subscribe(topic, listener),
    close: async () => {
      await feed.close();
      redis.disconnect();
    },
  };
}
