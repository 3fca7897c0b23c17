import { Redis } from 'ioredis';

/**
 * ioredis with bounded waits: no offline queue (a command fails at once while disconnected, so
 * the quota falls back to the insurance limiter instead of queueing), a short command timeout,
 * and reconnection in the background, so Redis coming back needs no restart.
 */
export function createRedis(url: string, name: string, { subscriber = false } = {}): Redis {
  return new Redis(url, {
    connectionName: name,
    // A subscriber must queue its SUBSCRIBE until connected; command connections never queue.
    enableOfflineQueue: subscriber,
    maxRetriesPerRequest: 1,
    commandTimeout: 500,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
}
