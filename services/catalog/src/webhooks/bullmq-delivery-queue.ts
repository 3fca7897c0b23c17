import { DelayedError, type Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import { LogThrottle } from '../../../shared/log-throttle';
import {
  type RedisClient,
  type RedisConnector,
  answersWithin,
  closeRedis,
} from '../../../shared/redis';
import {
  type DeliveryWorker,
  type DeliveryWorkerOptions,
  POSTPONE_MS,
  type QueuedDelivery,
  RETENTION,
  attemptDelivery,
  queuedDelivery,
} from './delivery-worker';
import type { DeliveryAttempt, DeliveryQueue, Subscription, WebhookEvent } from './webhook-types';

const QUEUE_NAME = 'webhook-deliveries';
/**
 * Every key of the queue starts `{tool-directory}:webhook-deliveries:`. BullMQ's scripts touch
 * several of them at once, which a Redis Cluster allows only within one hash slot: the hash tag
 * `{tool-directory}` puts them all in the same one (so the queue lives on one shard).
 */
export const QUEUE_PREFIX = '{tool-directory}';
/**
 * Where versions before the hash tag kept the queue, on one Redis: deliveries queued there are
 * still made (a worker drains it while it holds any key).
 */
export const LEGACY_QUEUE_PREFIX = 'tool-directory';
/**
 * Event ids of deliveries not over yet, scored by enqueue time: the oldest's age is a metric. It
 * and the attempts lists are each read and written alone, so they need no hash tag.
 */
const PENDING_KEY = 'tool-directory:webhook-pending';
const attemptsKey = (subscriptionId: string) => `tool-directory:webhook-attempts:${subscriptionId}`;
/** Job states in which a delivery is not over. */
const PENDING_STATES = ['waiting', 'delayed', 'active', 'prioritized', 'waiting-children'] as const;
/** backlog() drops at most this many stale entries (deliveries already over) per call. */
const STALE_CHECKS = 100;

/** The processor's way of telling the backoff strategy when to retry. */
class RetryLater extends Error {
  override name = 'RetryLater';
  constructor(
    readonly delayMs: number,
    reason: string,
  ) {
    super(reason);
  }
}

/**
 * The delivery queue on Redis (BullMQ), for several catalog replicas. The job id is the event
 * id, so enqueuing an event twice (two replicas following the same change) queues it once, and
 * BullMQ's job lock lets one worker of all replicas attempt it at a time. A job's `attempts` is
 * the schedule's length + 1; the delay before each retry (the schedule's step with jitter, or a
 * later `Retry-After`) is computed by the processor, which throws it to a custom backoff
 * strategy; so BullMQ's own attempt count bounds the retries and no attempt goes uncounted.
 * Attempts are kept in a capped Redis list per subscription. Redis must run with
 * `maxmemory-policy noeviction` (docs/webhook-deliveries.md).
 */
export class BullmqDeliveryQueue implements DeliveryQueue {
  /** Commands fail after one reconnection attempt instead of waiting for Redis indefinitely. */
  private readonly redis: RedisClient;
  readonly queue: Queue<QueuedDelivery>;

  constructor(
    readonly connector: RedisConnector,
    private readonly schedule: readonly number[],
  ) {
    this.redis = connector.connect('catalog-webhook-queue', { bullmq: 'queue' });
    this.queue = new Queue<QueuedDelivery>(QUEUE_NAME, {
      connection: this.redis,
      prefix: QUEUE_PREFIX,
    });
    // Connection errors surface as failed commands; the 'error' event must have a listener.
    this.queue.on('error', () => undefined);
  }

  async enqueue(subscription: Subscription, event: WebhookEvent): Promise<void> {
    // Before the job exists, so that a fast worker's removal cannot come first; an entry whose
    // job was a duplicate of one already over is dropped by backlog().
    await this.redis.zadd(PENDING_KEY, 'NX', Date.now(), event.id);
    await this.queue.add(event.type, queuedDelivery(subscription, event), {
      jobId: event.id,
      attempts: this.schedule.length + 1,
      backoff: { type: 'webhook' },
      removeOnComplete: { age: RETENTION.finishedMs / 1000, count: 10_000 },
      removeOnFail: { age: RETENTION.finishedMs / 1000, count: 10_000 },
    });
  }

  async attempts(subscriptionId: string, limit: number): Promise<DeliveryAttempt[]> {
    const entries = await this.redis.lrange(attemptsKey(subscriptionId), 0, limit - 1);
    return entries.map((entry) => JSON.parse(entry) as DeliveryAttempt);
  }

  /** Newest first, capped, and forgotten a while after the subscription's last attempt. */
  async record(subscriptionId: string, attempt: DeliveryAttempt): Promise<void> {
    const key = attemptsKey(subscriptionId);
    await this.redis
      .multi()
      .lpush(key, JSON.stringify(attempt))
      .ltrim(key, 0, RETENTION.attemptsPerSubscription - 1)
      .pexpire(key, RETENTION.attemptsMs)
      .exec();
  }

  /** The delivery is over (delivered, failed, disabled or dropped). */
  async settled(eventId: string): Promise<void> {
    await this.redis.zrem(PENDING_KEY, eventId);
  }

  async backlog(): Promise<{ pending: number; oldestPendingSeconds: number }> {
    const counts = await this.queue.getJobCounts(...PENDING_STATES);
    const pending = Object.values(counts).reduce((sum, n) => sum + n, 0);
    for (let checked = 0; checked < STALE_CHECKS; checked++) {
      const [eventId, score] = await this.redis.zrange(PENDING_KEY, 0, '0', 'WITHSCORES');
      if (eventId === undefined) break;
      const state = await this.queue.getJobState(eventId);
      if ((PENDING_STATES as readonly string[]).includes(state)) {
        return { pending, oldestPendingSeconds: Math.max(0, (Date.now() - Number(score)) / 1000) };
      }
      await this.redis.zrem(PENDING_KEY, eventId);
    }
    return { pending, oldestPendingSeconds: 0 };
  }

  async close(): Promise<void> {
    await this.queue.close();
    await closeRedis(this.redis);
  }
}

const ERROR_LOG_WINDOW_MS = 60_000;

export interface BullmqWorkerOptions extends DeliveryWorkerOptions {
  /** Attempts in flight at once in this process. */
  concurrency?: number;
}

/** How long the worker's close waits for Redis to answer before taking it for down. */
const REDIS_CHECK_MS = 500;

/** Attempts the queue's deliveries; on several replicas each job goes to one of them. */
export class BullmqDeliveryWorker implements DeliveryWorker {
  /** BullMQ's blocking connection needs `maxRetriesPerRequest: null`; it is copied from this. */
  private readonly redis: RedisClient;
  private readonly worker: Worker<QueuedDelivery>;
  /** Drains the queue of earlier versions, when there is one. */
  private legacy: Worker<QueuedDelivery> | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly queue: BullmqDeliveryQueue,
    private readonly options: BullmqWorkerOptions,
  ) {
    this.redis = queue.connector.connect('catalog-webhook-worker', { bullmq: 'worker' });
    this.worker = this.createWorker(QUEUE_PREFIX);
  }

  private createWorker(prefix: string): Worker<QueuedDelivery> {
    const { options } = this;
    const worker = new Worker<QueuedDelivery>(
      QUEUE_NAME,
      (job, token) => this.process(job, token),
      {
        connection: this.redis,
        prefix,
        autorun: false,
        concurrency: options.concurrency ?? 4,
        // A worker killed mid-attempt leaves its job locked: the lock outlives one attempt (the
        // time limit, renewed while running) by a little, and stalled jobs are looked for every
        // 5 s, so the delivery resumes within about 20 s instead of BullMQ's default minute.
        lockDuration: options.timeoutMs + 5_000,
        stalledInterval: 5_000,
        settings: {
          // Any other error (Redis failing while the attempt is recorded) retries soon.
          backoffStrategy: (_attemptsMade, _type, err) =>
            err instanceof RetryLater ? err.delayMs : POSTPONE_MS,
        },
      },
    );
    // Every reconnection attempt fails alike while Redis is down: one line a minute says so.
    const errors = new LogThrottle<string>(ERROR_LOG_WINDOW_MS);
    worker.on('error', (err) => {
      const suppressed = errors.admit(err.message);
      if (suppressed !== undefined) {
        options.logger?.warn({ err: err.message, suppressed }, 'Webhook worker: Redis error');
      }
    });
    return worker;
  }

  async start(): Promise<void> {
    await this.worker.waitUntilReady();
    this.running ??= this.runLoop(this.worker);
    // A queue of earlier versions (one Redis only: they knew no cluster) is drained alongside.
    if (!this.legacy && (await this.redis.exists(`${LEGACY_QUEUE_PREFIX}:${QUEUE_NAME}:meta`))) {
      this.legacy = this.createWorker(LEGACY_QUEUE_PREFIX);
      void this.runLoop(this.legacy);
      this.options.logger?.info(
        { prefix: LEGACY_QUEUE_PREFIX },
        'Webhook worker: also delivering what earlier versions queued',
      );
    }
  }

  /**
   * A worker's loop, which ends when the worker closes. Closed while Redis is down, it may end on
   * the connection's error instead: said in the log, never left as an unhandled rejection (which
   * would make the shutdown exit 1).
   */
  private runLoop(worker: Worker<QueuedDelivery>): Promise<void> {
    return worker.run().catch((err: unknown) => {
      this.options.logger?.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'Webhook worker: its loop ended on an error',
      );
    });
  }

  async close(): Promise<void> {
    // Attempts under way finish first, unless Redis is down: then none could be recorded, and
    // the worker's loop, blocked on a command to that Redis, would outlast the grace period.
    // Asked, not read from the connection's status: a connection can still say 'ready' a moment
    // after Redis stopped, and the worker's graceful close then waited on it until killed.
    const redisDown = !(await answersWithin(this.redis, REDIS_CHECK_MS));
    await Promise.all([this.worker.close(redisDown), this.legacy?.close(redisDown)]);
    if (!redisDown) await this.running;
    await closeRedis(this.redis);
  }

  private async process(job: Job<QueuedDelivery>, token?: string): Promise<void> {
    const delivery = job.data;
    const result = await attemptDelivery(delivery, job.attemptsMade + 1, this.options);
    if (result === 'postponed') {
      await job.moveToDelayed(Date.now() + POSTPONE_MS, token);
      throw new DelayedError();
    }
    const attempt = result === 'dropped' ? null : result;
    if (attempt) await this.queue.record(delivery.subscriptionId, attempt);
    if (attempt?.nextAttemptAt) {
      throw new RetryLater(
        Math.max(1, Date.parse(attempt.nextAttemptAt) - Date.now()),
        attempt.error ?? `HTTP ${attempt.statusCode}`,
      );
    }
    await this.queue.settled(delivery.event.id);
    if (attempt?.outcome === 'failed') {
      throw new UnrecoverableError(attempt.error ?? `HTTP ${attempt.statusCode}`);
    }
  }
}
