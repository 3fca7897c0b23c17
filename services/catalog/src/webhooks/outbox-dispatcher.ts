import type { Logger } from 'pino';
import type { ChangeFeed } from '../../../shared/change-feed/change-feed';
import type { CatalogStore, OutboxEntry } from '../store/catalog-store';
import type { DispatchCursor } from './dispatch-cursor';
import type {
  DeliveryQueue,
  SubscribableEvent,
  Subscription,
  SubscriptionStore,
  WebhookEvent,
} from './webhook-types';

export interface OutboxDispatcherOptions {
  store: Pick<CatalogStore, 'changesSince' | 'refresh'>;
  subscriptions: Pick<SubscriptionStore, 'matching'>;
  queue: Pick<DeliveryQueue, 'enqueue'>;
  cursor: DispatchCursor;
  /** Its `catalog` topic says a change was written: dispatch at once. */
  feed: ChangeFeed;
  /** The safety net for a missed announcement. */
  pollMs?: number;
  batchSize?: number;
  logger: Pick<Logger, 'warn' | 'info'>;
}

const DEFAULT_POLL_MS = 1_000;
const DEFAULT_BATCH_SIZE = 500;

/**
 * docs/api.md#webhook-events-and-deliveries's body of one catalog change; the id is the same
 * whoever dispatches it, and when.
 */
export function toolEvent(entry: OutboxEntry, subscription: Subscription): WebhookEvent {
  const data =
    entry.type === 'tool.deleted'
      ? { slug: entry.slug, name: entry.name }
      : entry.type === 'tool.updated'
        ? { ...entry.tool, changedFields: entry.changedFields }
        : { ...entry.tool };
  return {
    id: `evt_${entry.version}_${subscription.id}`,
    type: entry.type,
    timestamp: entry.at,
    data,
  };
}

/** A subscription hears of the changes made from its creation on, never of older ones. */
function heardOf(subscription: Subscription, entry: OutboxEntry): boolean {
  return Date.parse(entry.at) >= Date.parse(subscription.createdAt);
}

/**
 * Turns the catalog's change outbox into webhook deliveries: each entry becomes one event per
 * matching subscription, enqueued under a deterministic id, so that dispatching an entry twice
 * (after a crash before the cursor moved, or by two catalog replicas at once) queues it once.
 * The durable cursor is advanced after a batch is enqueued: a restart resumes without a gap.
 * Runs on every `catalog` announcement and every poll, one run at a time.
 */
export class OutboxDispatcher {
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private failing = false;
  private readonly batchSize: number;
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  private constructor(private readonly options: OutboxDispatcherOptions) {
    this.batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  }

  /** Starts following the outbox; the first run has begun when this resolves. */
  static async start(options: OutboxDispatcherOptions): Promise<OutboxDispatcher> {
    const dispatcher = new OutboxDispatcher(options);
    dispatcher.unsubscribe = await options.feed.subscribe('catalog', () => dispatcher.trigger());
    dispatcher.timer = setInterval(
      () => dispatcher.trigger(),
      options.pollMs ?? DEFAULT_POLL_MS,
    ).unref();
    dispatcher.trigger();
    return dispatcher;
  }

  /** Dispatches everything written so far; resolves when it is enqueued (or the run failed). */
  async catchUp(): Promise<void> {
    this.trigger();
    await this.running;
  }

  private trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      // The run in progress may have read the outbox before this change: one more follows.
      this.again = true;
      return;
    }
    this.running = this.runUntilQuiet().finally(() => (this.running = undefined));
  }

  private async runUntilQuiet(): Promise<void> {
    do {
      this.again = false;
      await this.dispatchPending().then(
        () => this.recovered(),
        (err: unknown) => this.failed(err),
      );
    } while (this.again && !this.stopped);
  }

  private failed(err: unknown): void {
    // The next run retries; one outage is one warning, not one a second.
    if (!this.failing) this.options.logger.warn({ err }, 'webhook dispatch failed; retrying');
    this.failing = true;
  }

  private recovered(): void {
    if (this.failing) this.options.logger.info('webhook dispatch recovered');
    this.failing = false;
  }

  /** Where dispatching stands; on the first start ever, the current version (no replay). */
  private async position(): Promise<number> {
    const { cursor, store } = this.options;
    const stored = await cursor.get();
    if (stored !== null) return stored;
    await cursor.advance(await store.refresh());
    // Another replica may have started, and dispatched, meanwhile.
    return (await cursor.get()) ?? 0;
  }

  private async dispatchPending(): Promise<void> {
    const { store, cursor } = this.options;
    let from = await this.position();
    while (!this.stopped) {
      const entries = await store.changesSince(from, this.batchSize);
      if (entries.length === 0) return;
      await this.dispatchBatch(entries);
      from = entries[entries.length - 1]!.version;
      await cursor.advance(from);
      if (entries.length < this.batchSize) return;
    }
  }

  private async dispatchBatch(entries: readonly OutboxEntry[]): Promise<void> {
    // Read after the entries: a subscription created later is younger than all of them.
    const subscribers = new Map<SubscribableEvent, Subscription[]>();
    for (const type of new Set(entries.map((entry) => entry.type))) {
      subscribers.set(type, await this.options.subscriptions.matching(type));
    }
    for (const entry of entries) {
      const recipients = subscribers.get(entry.type)!.filter((s) => heardOf(s, entry));
      await Promise.all(recipients.map((s) => this.options.queue.enqueue(s, toolEvent(entry, s))));
    }
  }

  /** Stops following; resolves when the run in progress has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    clearInterval(this.timer);
    await this.running;
  }
}
