import { randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import {
  EmbeddedDeliveryQueue,
  EmbeddedDeliveryWorker,
} from '../../services/catalog/src/webhooks/embedded-delivery-queue';
import type {
  DeliveryAttempt,
  DeliveryQueue,
  SubscribableEvent,
  Subscription,
  SubscriptionStore,
  WebhookEvent,
} from '../../services/catalog/src/webhooks/webhook-types';
import { startReceiver } from './webhook-receiver';
import { tempDataDir } from './services';

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
      secret: `whsec_${randomBytes(24).toString('base64')}`,
      createdAt: new Date().toISOString(),
      disabledAt: null,
      ...fields,
    };
    this.all.push(subscription);
    return subscription;
  }

  /** The worker's lookup: the subscription as it is now. */
  async byId(id: string): Promise<Subscription | null> {
    return this.all.find((s) => s.id === id) ?? null;
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

/**
 * The real embedded delivery queue (under a fresh DATA_DIR) with a running worker that delivers
 * to a local receiver (private addresses allowed, as WEBHOOK_ALLOW_PRIVATE=true would).
 */
export async function deliveringToReceiver(subscriptions: MemorySubscriptions) {
  const receiver = await startReceiver();
  const queue = new EmbeddedDeliveryQueue(tempDataDir());
  const worker = new EmbeddedDeliveryWorker(queue, {
    lookup: (id) => subscriptions.byId(id),
    disable: async () => undefined,
    schedule: [1_000],
    timeoutMs: 5_000,
    allowPrivate: true,
    pollMs: 50,
  });
  await worker.start();
  return {
    queue,
    receiver,
    /** The body of each request received, verified with `standardwebhooks` as a client would. */
    verifiedBodies(subscription: Subscription): unknown[] {
      const webhook = new Webhook(subscription.secret);
      return receiver.requests.map((r) =>
        webhook.verify(r.body, r.headers as Record<string, string>),
      );
    },
    async close() {
      await worker.close();
      await queue.close();
      await receiver.close();
    },
  };
}
