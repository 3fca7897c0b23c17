import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type EmbeddedDatabase,
  openEmbeddedDatabase,
} from '../../../shared/embedded/embedded-database';
import {
  ATTEMPTS_KEPT_MS,
  ATTEMPTS_KEPT_PER_SUBSCRIPTION,
  type DeliveryWorker,
  type DeliveryWorkerOptions,
  FINISHED_KEPT_MS,
  INTERNAL_RETRY_MS,
  type QueuedDelivery,
  attemptDelivery,
  queuedDelivery,
} from './delivery-worker';
import type { DeliveryAttempt, DeliveryQueue, Subscription, WebhookEvent } from './webhook-types';

export const WEBHOOK_QUEUE_FILE = 'webhook-queue.db';

const MIGRATIONS = [
  (db: EmbeddedDatabase) =>
    db.exec(`
      -- One row per event and subscription. due_at is NULL once the delivery is over; the row
      -- stays a while after, so a late duplicate enqueue is still recognised.
      CREATE TABLE deliveries (
        event_id TEXT PRIMARY KEY,
        subscription_id TEXT NOT NULL,
        delivery TEXT NOT NULL,
        attempts_made INTEGER NOT NULL DEFAULT 0,
        enqueued_at INTEGER NOT NULL,
        due_at INTEGER,
        locked_until INTEGER NOT NULL DEFAULT 0,
        lease TEXT,
        finished_at INTEGER
      );
      CREATE INDEX deliveries_due ON deliveries (due_at) WHERE due_at IS NOT NULL;
      CREATE INDEX deliveries_finished ON deliveries (finished_at) WHERE finished_at IS NOT NULL;
      CREATE TABLE attempts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        subscription_id TEXT NOT NULL,
        event_id TEXT NOT NULL,
        type TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        at TEXT NOT NULL,
        status_code INTEGER,
        error TEXT,
        outcome TEXT NOT NULL,
        next_attempt_at TEXT
      );
      CREATE INDEX attempts_by_subscription ON attempts (subscription_id, id);`),
];

interface AttemptRow {
  event_id: string;
  type: DeliveryAttempt['type'];
  attempt: number;
  at: string;
  status_code: number | null;
  error: string | null;
  outcome: DeliveryAttempt['outcome'];
  next_attempt_at: string | null;
}

/** A delivery leased to one worker. */
export interface Claimed {
  lease: string;
  attemptsMade: number;
  delivery: QueuedDelivery;
}

/**
 * The delivery queue in `DATA_DIR/webhook-queue.db` (SQLite), for the embedded setup. Enqueuing
 * is an insert keyed by the event id; a worker leases a due delivery in an IMMEDIATE
 * transaction, so two processes on one DATA_DIR never attempt one delivery at once. Every
 * state change is a committed transaction: after a kill -9, a pending retry is still there, and
 * a delivery leased by the dead process is taken up again when its lease runs out.
 */
export class EmbeddedDeliveryQueue implements DeliveryQueue {
  private readonly db: EmbeddedDatabase;
  private readonly insert;
  private readonly recent;
  private readonly pending;
  readonly claim: (now: number, leaseMs: number) => Claimed | null;
  readonly finish: (
    claimed: Claimed,
    subscriptionId: string,
    attempt: DeliveryAttempt | null,
    now: number,
  ) => boolean;
  readonly postpone: (claimed: Claimed, dueAt: number) => void;
  readonly prune: (now: number) => void;

  constructor(dataDir: string) {
    this.db = openEmbeddedDatabase(dataDir, WEBHOOK_QUEUE_FILE, MIGRATIONS);
    this.insert = this.db.prepare(
      `INSERT INTO deliveries (event_id, subscription_id, delivery, enqueued_at, due_at)
       VALUES (?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`,
    );
    this.recent = this.db.prepare<[string, number], AttemptRow>(
      `SELECT event_id, type, attempt, at, status_code, error, outcome, next_attempt_at
       FROM attempts WHERE subscription_id = ? ORDER BY id DESC LIMIT ?`,
    );
    this.pending = this.db.prepare<[], { pending: number; oldest: number | null }>(
      'SELECT count(*) AS pending, min(enqueued_at) AS oldest FROM deliveries WHERE due_at IS NOT NULL',
    );

    const due = this.db.prepare<
      [number, number],
      { event_id: string; delivery: string; attempts_made: number }
    >(
      `SELECT event_id, delivery, attempts_made FROM deliveries
       WHERE due_at <= ? AND locked_until <= ? ORDER BY due_at LIMIT 1`,
    );
    const lock = this.db.prepare(
      'UPDATE deliveries SET locked_until = ?, lease = ? WHERE event_id = ?',
    );
    const claim = this.db.transaction((now: number, leaseMs: number): Claimed | null => {
      const row = due.get(now, now);
      if (!row) return null;
      const lease = randomUUID();
      lock.run(now + leaseMs, lease, row.event_id);
      return {
        lease,
        attemptsMade: row.attempts_made,
        delivery: JSON.parse(row.delivery) as QueuedDelivery,
      };
    });
    // IMMEDIATE: the write lock is taken before the read, so two processes cannot both see
    // the same delivery as free.
    this.claim = (now, leaseMs) => claim.immediate(now, leaseMs);

    const reschedule = this.db.prepare(
      `UPDATE deliveries SET attempts_made = @attempt, due_at = @dueAt, locked_until = 0, lease = NULL,
         finished_at = CASE WHEN @dueAt IS NULL THEN @now END
       WHERE event_id = @eventId AND lease = @lease`,
    );
    const record = this.db.prepare(
      `INSERT INTO attempts (subscription_id, event_id, type, attempt, at, status_code, error,
         outcome, next_attempt_at)
       VALUES (@subscriptionId, @eventId, @type, @attempt, @at, @statusCode, @error, @outcome,
         @nextAttemptAt)`,
    );
    const trim = this.db.prepare(
      `DELETE FROM attempts WHERE subscription_id = ? AND id <= (
         SELECT id FROM attempts WHERE subscription_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
    );
    this.finish = this.db.transaction(
      (claimed: Claimed, subscriptionId: string, attempt: DeliveryAttempt | null, now: number) => {
        const { changes } = reschedule.run({
          eventId: claimed.delivery.event.id,
          lease: claimed.lease,
          attempt: attempt?.attempt ?? claimed.attemptsMade,
          dueAt: attempt?.nextAttemptAt ? Date.parse(attempt.nextAttemptAt) : null,
          now,
        });
        // A lease that ran out meanwhile belongs to another worker now: its record wins.
        if (changes === 0 || !attempt) return changes > 0;
        record.run({ subscriptionId, ...attempt });
        trim.run(subscriptionId, subscriptionId, ATTEMPTS_KEPT_PER_SUBSCRIPTION);
        return true;
      },
    );

    const release = this.db.prepare(
      'UPDATE deliveries SET due_at = ?, locked_until = 0, lease = NULL WHERE event_id = ? AND lease = ?',
    );
    this.postpone = (claimed, dueAt) => {
      release.run(dueAt, claimed.delivery.event.id, claimed.lease);
    };

    const forgetFinished = this.db.prepare('DELETE FROM deliveries WHERE finished_at < ?');
    const forgetAttempts = this.db.prepare('DELETE FROM attempts WHERE at < ?');
    this.prune = this.db.transaction((now: number) => {
      forgetFinished.run(now - FINISHED_KEPT_MS);
      forgetAttempts.run(new Date(now - ATTEMPTS_KEPT_MS).toISOString());
    });
  }

  async enqueue(subscription: Subscription, event: WebhookEvent): Promise<void> {
    const now = Date.now();
    this.insert.run(
      event.id,
      subscription.id,
      JSON.stringify(queuedDelivery(subscription, event)),
      now,
      now,
    );
  }

  async attempts(subscriptionId: string, limit: number): Promise<DeliveryAttempt[]> {
    return this.recent.all(subscriptionId, limit).map((row) => ({
      eventId: row.event_id,
      type: row.type,
      attempt: row.attempt,
      at: row.at,
      statusCode: row.status_code,
      error: row.error,
      outcome: row.outcome,
      nextAttemptAt: row.next_attempt_at,
    }));
  }

  async backlog(): Promise<{ pending: number; oldestPendingSeconds: number }> {
    const { pending, oldest } = this.pending.get()!;
    return {
      pending,
      oldestPendingSeconds: oldest === null ? 0 : Math.max(0, (Date.now() - oldest) / 1000),
    };
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

export interface EmbeddedWorkerOptions extends DeliveryWorkerOptions {
  /** How often to look for due deliveries when there were none. */
  pollMs?: number;
  /** Attempts in flight at once. */
  concurrency?: number;
}

const PRUNE_EVERY_MS = 60_000;

/**
 * Polls the embedded queue for due deliveries and attempts them, a few at a time. A lease lasts
 * the attempt's time limit plus a minute: long enough for any attempt, short enough that a
 * crashed worker's delivery is soon taken up again.
 */
export class EmbeddedDeliveryWorker implements DeliveryWorker {
  private readonly stopping = new AbortController();
  private readonly inFlight = new Set<Promise<void>>();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly queue: EmbeddedDeliveryQueue,
    private readonly options: EmbeddedWorkerOptions,
  ) {}

  async start(): Promise<void> {
    this.loop ??= this.run();
  }

  async close(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    await Promise.all(this.inFlight);
  }

  private async run(): Promise<void> {
    const { pollMs = 200, concurrency = 4, timeoutMs } = this.options;
    const leaseMs = timeoutMs + 60_000;
    let prunedAt = 0;
    while (!this.stopping.signal.aborted) {
      const now = Date.now();
      if (now - prunedAt > PRUNE_EVERY_MS) {
        prunedAt = now;
        this.guard(() => this.queue.prune(now));
      }
      const claimed =
        this.inFlight.size < concurrency ? this.guard(() => this.queue.claim(now, leaseMs)) : null;
      if (claimed) {
        const running = this.attempt(claimed).finally(() => this.inFlight.delete(running));
        this.inFlight.add(running);
        continue;
      }
      if (this.inFlight.size >= concurrency) await Promise.race(this.inFlight);
      else await sleep(pollMs, undefined, { signal: this.stopping.signal }).catch(() => undefined);
    }
  }

  private async attempt(claimed: Claimed): Promise<void> {
    const { delivery } = claimed;
    try {
      const attempt = await attemptDelivery(delivery, claimed.attemptsMade + 1, this.options);
      this.guard(() => this.queue.finish(claimed, delivery.subscriptionId, attempt, Date.now()));
    } catch (err) {
      this.options.logger?.warn(
        { err: (err as Error).message, event: delivery.event.id },
        'Webhook delivery postponed: the subscription could not be read',
      );
      this.guard(() => this.queue.postpone(claimed, Date.now() + INTERNAL_RETRY_MS));
    }
  }

  /** A database error (disk full, the file gone) is logged; the loop goes on and tries again. */
  private guard<T>(run: () => T): T | null {
    try {
      return run();
    } catch (err) {
      this.options.logger?.warn({ err: (err as Error).message }, 'Webhook queue database error');
      return null;
    }
  }
}
