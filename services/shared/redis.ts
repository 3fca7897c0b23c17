import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** The longest a command waits for Redis's reply before it fails (then decided in memory). */
export const COMMAND_TIMEOUT_MS = 500;

export interface RedisOptions {
  /**
   * A subscriber must queue its SUBSCRIBE until connected, and a CLI its one PUBLISH; the
   * gateway's quota connection never queues (it decides in memory instead).
   */
  queueWhileDisconnected?: boolean;
  /**
   * For a connection on the path of every request (the quota's): instead of a timer per
   * command, ioredis's `socketTimeout` drops the connection when no reply has come for
   * COMMAND_TIMEOUT_MS while commands wait, which fails them all at once; none is sent again
   * (`maxRetriesPerRequest: 0`), and ioredis connects again in the background. The timer per
   * command cost the gateway about 3 µs of CPU per request (docs/performance.md).
   */
  hotPath?: boolean;
}

/**
 * ioredis with bounded waits: no offline queue (a command fails at once while disconnected, so
 * the quota decides in memory instead of queueing), no reply awaited longer than
 * COMMAND_TIMEOUT_MS, and reconnection in the background, so Redis coming back needs no restart.
 */
export function createRedis(
  url: string,
  name: string,
  { queueWhileDisconnected = false, hotPath = false }: RedisOptions = {},
): Redis {
  return new Redis(url, {
    connectionName: name,
    enableOfflineQueue: queueWhileDisconnected,
    maxRetriesPerRequest: hotPath ? 0 : 1,
    ...(hotPath ? { socketTimeout: COMMAND_TIMEOUT_MS } : { commandTimeout: COMMAND_TIMEOUT_MS }),
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
}

/**
 * Makes the commands sent on `redis` within one event-loop turn leave in one write: called before
 * a command is sent, it corks the connection's socket until the turn's check phase
 * (`setImmediate`), so the quota commands of all the requests read in one turn go out together
 * and their replies come back together. Each request still sends its own command and waits for
 * its own reply. ioredis's auto-pipelining batches the same way but builds a Pipeline object per
 * batch (copying every defined script onto it), which cost the gateway more CPU than the system
 * calls it saved (docs/performance.md, "Quota commands batched per event-loop turn").
 */
export function writeBatcher(redis: Redis): () => void {
  let corked: Redis['stream'] | undefined;
  const flush = () => {
    corked!.uncork();
    corked = undefined;
  };
  return () => {
    // Before the first connection there is no socket; the command then fails or waits anyway.
    if (corked !== undefined || redis.stream === undefined) return;
    corked = redis.stream;
    corked.cork();
    setImmediate(flush);
  };
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

/** How long a closing connection waits for the replies of the commands it has sent. */
const QUIT_TIMEOUT_MS = 1_000;

/**
 * Closes a connection on shutdown: QUIT, so the replies of commands already sent still arrive,
 * but never waiting on a Redis that cannot answer (a QUIT queued while disconnected would wait for
 * the reconnection, past the shutdown's grace period).
 */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, QUIT_TIMEOUT_MS).unref();
  });
  const quit = redis.quit().then(
    () => true,
    () => false,
  );
  const closed = await Promise.race([quit, timedOut.then(() => false)]);
  clearTimeout(timer);
  if (!closed) redis.disconnect();
}
