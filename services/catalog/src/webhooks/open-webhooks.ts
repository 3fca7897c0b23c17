import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ChangeFeed } from '../../../shared/change-feed/change-feed';
import type { RedisClient } from '../../../shared/redis';
import type { CatalogConfig } from '../config';
import type { CatalogStore } from '../store/catalog-store';
import { createSubscriptionStore } from './create-subscription-store';
import { EmbeddedDispatchCursor, RedisDispatchCursor } from './dispatch-cursor';
import { openDeliveryQueue } from './open-delivery-queue';
import { OutboxDispatcher } from './outbox-dispatcher';
import type { KeyStatus, QuotaWarningRouteOptions, WebhookRoutesOptions } from './webhook-types';

export interface Webhooks {
  routes: WebhookRoutesOptions;
  quotaWarnings: QuotaWarningRouteOptions;
  close(): Promise<void>;
}

/**
 * Enterprise webhooks in this process: the subscriptions (next to the catalog's data), the
 * delivery queue (BullMQ on Redis, else SQLite under DATA_DIR), and, unless WEBHOOK_WORKER is
 * `off`, the worker that delivers and the dispatcher that turns outbox changes into deliveries.
 * Key changes arrive on the change feed's `key-status` topic: only an active Enterprise key's
 * subscriptions get new events.
 */
export async function openWebhooks(
  config: CatalogConfig,
  {
    store,
    feed,
    redis,
    logger,
    registry,
  }: {
    store: CatalogStore;
    feed: ChangeFeed;
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
  const stopKeyStatus = await feed.subscribe('key-status', (message) => {
    if (message === null) return;
    subscriptions
      .setKeyStatus(JSON.parse(message) as KeyStatus)
      .catch((err: unknown) => logger.warn({ err }, 'key status not recorded'));
  });

  let dispatcher: OutboxDispatcher | undefined;
  const cursor = redis
    ? new RedisDispatchCursor(redis)
    : new EmbeddedDispatchCursor(config.DATA_DIR);
  if (config.WEBHOOK_WORKER !== 'off') {
    await worker.start();
    dispatcher = await OutboxDispatcher.start({
      store,
      subscriptions,
      queue,
      cursor,
      feed,
      logger,
    });
  }
  return {
    routes: { subscriptions, queue, allowPrivate: config.WEBHOOK_ALLOW_PRIVATE },
    quotaWarnings: { subscriptions, queue },
    close: async () => {
      stopKeyStatus();
      await dispatcher?.stop();
      await worker.close();
      await queue.close();
      await cursor.close();
      await subscriptions.close();
    },
  };
}
