import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ChangeFeed } from '../../../shared/change-feed/change-feed';
import type { RedisClient } from '../../../shared/redis';
import type { CatalogConfig } from '../config';
import { createSubscriptionStore } from './create-subscription-store';
import type { DeliveryWorker } from './delivery-worker';
import {
  type DispatchCursor,
  EmbeddedDispatchCursor,
  RedisDispatchCursor,
} from './dispatch-cursor';
import { openDeliveryQueue } from './open-delivery-queue';
import type {
  DeliveryQueue,
  KeyStatus,
  QuotaWarningRouteOptions,
  SubscriptionStore,
  WebhookRoutesOptions,
} from './webhook-types';

export interface Webhooks {
  routes: WebhookRoutesOptions;
  quotaWarnings: QuotaWarningRouteOptions;
  subscriptions: SubscriptionStore;
  queue: DeliveryQueue;
  /** Not started here: startWatchers starts it unless WEBHOOK_WORKER is `off`. */
  worker: DeliveryWorker;
  /** Where the outbox dispatcher has got to. */
  cursor: DispatchCursor;
  /** Closes the worker too, started or not: it holds a connection from when it was built. */
  close(): Promise<void>;
}

/**
 * Enterprise webhooks in this process: the subscriptions (next to the catalog's data), the
 * delivery queue (BullMQ on Redis, else SQLite under DATA_DIR) with its worker, and the outbox
 * dispatcher's cursor. Nothing runs yet: startWatchers follows key changes and, unless
 * WEBHOOK_WORKER is `off`, starts the worker that delivers and the dispatcher that turns outbox
 * changes into deliveries.
 */
export async function openWebhooks(
  config: CatalogConfig,
  {
    redis,
    logger,
    registry,
  }: {
    redis: RedisClient | undefined;
    logger: Logger;
    registry: Registry;
  },
): Promise<Webhooks> {
  const subscriptions = await createSubscriptionStore(config);
  const { queue, worker } = openDeliveryQueue(config, {
    // A deleted or disabled subscription's pending deliveries are dropped.
    lookup: (id, keyId) => subscriptions.get(keyId, id),
    disable: (id) => subscriptions.disable(id, new Date().toISOString()),
    logger,
    registry,
  });
  const cursor = redis
    ? new RedisDispatchCursor(redis)
    : new EmbeddedDispatchCursor(config.DATA_DIR);
  return {
    routes: { subscriptions, queue, allowPrivate: config.WEBHOOK_ALLOW_PRIVATE },
    quotaWarnings: { subscriptions, queue },
    subscriptions,
    queue,
    worker,
    cursor,
    close: async () => {
      await worker.close();
      await queue.close();
      await cursor.close();
      await subscriptions.close();
    },
  };
}

/**
 * Key changes arrive on the change feed's `key-status` topic: only an active Enterprise key's
 * subscriptions get new events. Returns a function that stops following.
 */
export async function followKeyStatus(
  subscriptions: Pick<SubscriptionStore, 'setKeyStatus'>,
  feed: ChangeFeed,
  logger: Pick<Logger, 'warn'>,
): Promise<() => void> {
  return feed.subscribe('key-status', (message) => {
    if (message === null) return;
    subscriptions
      .setKeyStatus(JSON.parse(message) as KeyStatus)
      .catch((err: unknown) => logger.warn({ err }, 'key status not recorded'));
  });
}
