import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** The longest a command waits for Redis's reply before it fails (then decided in memory). */
export const COMMAND_TIMEOUT_MS = 500;

/** How often the stall watch looks at a connection's oldest unanswered command. */
const STALL_CHECK_MS = 100;

export interface RedisOptions {
  /**
   * A subscriber must queue its SUBSCRIBE until connected, and a CLI its one PUBLISH; the
   * gateway's quota connection never queues (it decides in memory instead).
   */
  queueWhileDisconnected?: boolean;
  /**
   * For a connection on the path of every request (the quota's): commands are bounded by
   * `dropWhenStalled` instead of a timer each, and a command waiting when the connection drops
   * fails at once instead of waiting to be sent again.
   */
  hotPath?: boolean;
}

/**
 * ioredis with bounded waits: no offline queue (a command fails at once while disconnected, so
 * the quota decides in memory instead of queueing), a command timeout, and reconnection in the
 * background, so Redis coming back needs no restart.
 */
export function createRedis(
  url: string,
  name: string,
  { queueWhileDisconnected = false, hotPath = false }: RedisOptions = {},
): Redis {
  const redis = new Redis(url, {
    connectionName: name,
    enableOfflineQueue: queueWhileDisconnected,
    maxRetriesPerRequest: hotPath ? 0 : 1,
    ...(!hotPath && { commandTimeout: COMMAND_TIMEOUT_MS }),
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
  if (hotPath) dropWhenStalled(redis, COMMAND_TIMEOUT_MS);
  return redis;
}

/**
 * Drops `redis`'s connection once its oldest unanswered command has waited `stallMs` (up to
 * STALL_CHECK_MS more): a Redis that stopped answering with its connection still open (stopped,
 * overloaded, or cut off without a reset) then fails every waiting command at once, and ioredis
 * connects again in the background. ioredis's `commandTimeout` bounds each command with a timer
 * of its own, which cost the gateway about 3 µs of CPU per request (docs/performance.md); this
 * looks at the head of ioredis's queue of sent commands on one timer, and costs a request
 * nothing. A command that got no reply is never sent again (`maxRetriesPerRequest: 0`).
 */
export function dropWhenStalled(redis: Redis, stallMs: number): void {
  let oldest: unknown;
  let since = 0;
  const timer = setInterval(() => {
    const head = redis.commandQueue.peekFront();
    const now = Date.now();
    if (head !== oldest) {
      oldest = head;
      since = now;
    } else if (head !== undefined && now - since >= stallMs) {
      oldest = undefined;
      redis.stream.destroy(new Error(`Redis stalled: no reply to a command in ${stallMs} ms`));
    }
  }, STALL_CHECK_MS).unref();
  redis.once('end', () => clearInterval(timer));
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
