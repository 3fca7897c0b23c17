import { randomUUID } from 'node:crypto';
import type {
  DeliveryAttempt,
  DeliveryQueue,
  SubscribableEvent,
  Subscription,
  SubscriptionStore,
  WebhookEvent,
} from '../../services/catalog/src/webhooks/webhook-types';

/**
 * Subscriptions in memory, for tests of what calls `matching` (every key counts as an active
 * Enterprise key here; the real stores are tested on their own).
 */
export class MemorySubscriptions implements Pick<SubscriptionStore, 'matching'> {
  readonly all: Subscription[] = [];

  add(fields: Partial<Subscription> & Pick<Subscription, 'events'>): Subscription {
    const subscription: Subscription = {
      id: `wh_${randomUUID().replaceAll('-', '')}`,
      keyId: 'key_test',
      url: 'https://receiver.example.com/hook',
      description: null,
      secret: 'whsec_dGVzdA==',
      createdAt: new Date().toISOString(),
      disabledAt: null,
      ...fields,
    };
    this.all.push(subscription);
    return subscription;
  }

  async matching(type: SubscribableEvent, keyId?: string): Promise<Subscription[]> {
    return this.all.filter(
      (s) =>
        s.events.includes(type) &&
        s.disabledAt === null &&
        (keyId === undefined || s.keyId === keyId),
    );
  }
}

/**
 * A delivery queue that records what is enqueued, idempotent by event id as the real queues
 * are (webhook-types.ts); `calls` counts every enqueue, duplicates included. `failures` makes
 * the next enqueues reject.
 */
export class RecordingQueue implements DeliveryQueue {
  readonly events = new Map<string, { subscription: Subscription; event: WebhookEvent }>();
  calls = 0;
  failures = 0;

  async enqueue(subscription: Subscription, event: WebhookEvent): Promise<void> {
    this.calls += 1;
    if (this.failures > 0) {
      this.failures -= 1;
      throw new Error('queue unavailable');
    }
    if (!this.events.has(event.id)) this.events.set(event.id, { subscription, event });
  }

  /** The events queued for one subscription, in the order they were first queued. */
  for(subscription: Subscription): WebhookEvent[] {
    return [...this.events.values()]
      .filter((e) => e.subscription.id === subscription.id)
      .map((e) => e.event);
  }

  async attempts(): Promise<DeliveryAttempt[]> {
    return [];
  }

  async backlog(): Promise<{ pending: number; oldestPendingSeconds: number }> {
    return { pending: this.events.size, oldestPendingSeconds: 0 };
  }

  async close(): Promise<void> {}
}
