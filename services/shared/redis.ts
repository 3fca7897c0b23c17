import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * ioredis with bounded waits: no offline queue (a command fails at once while disconnected, so
 * the quota decides in memory instead of queueing), a short command timeout, and reconnection
 * in the background, so Redis coming back needs no restart. With `batchPerTick` the commands of
 * one event-loop turn go out in one write and their replies come back in one read (ioredis'
 * auto-pipelining): each request still makes its one round trip, but under load the gateway
 * pays one system call for the quota commands of all requests that arrived together.
 */
export function createRedis(
  url: string,
  name: string,
  { queueWhileDisconnected = false, batchPerTick = false } = {},
): Redis {
  return new Redis(url, {
    connectionName: name,
    // A subscriber must queue its SUBSCRIBE until connected, and a CLI its one PUBLISH; the
    // gateway's quota connection never queues (it decides in memory instead).
    enableOfflineQueue: queueWhileDisconnected,
    maxRetriesPerRequest: 1,
    commandTimeout: 500,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
    enableAutoPipelining: batchPerTick,
  });
}

/** Logs and counts a connection's state changes: a failure is news once, not once per retry. */
export function watchConnection(
  redis: Redis,
  name: string,
  logger: Pick<Logger, 'warn' | 'info'>,
  countError: () => void = () => undefined,
): void {
  let healthy = true;
  redis.on('error', (err: Error) => {
    countError();
    if (healthy) logger.warn({ err: err.message, connection: name }, 'Redis unavailable');
    healthy = false;
  });
  redis.on('ready', () => {
    if (!healthy) logger.info({ connection: name }, 'Redis available again');
    healthy = true;
  });
}
