import type { Logger } from 'pino';
import { followCatalogChanges } from './changes/catalog-follower';
import { pruneChangesRegularly } from './changes/change-retention';
import { VERSION_POLL_MS } from './changes/open-catalog-changes';
import type { CatalogConfig } from './config';
import type { CatalogDependencies } from './dependencies';
import { followKeyStatus } from './webhooks/open-webhooks';
import { OutboxDispatcher } from './webhooks/outbox-dispatcher';

/**
 * Starts everything that keeps the catalog's dependencies current in the background: the store
 * following the catalog's version, the change log's pruning, the webhook subscriptions following key changes and, unless
 * WEBHOOK_WORKER is `off`, the delivery worker and the outbox dispatcher. Returns one function
 * that stops them all; call it before `deps.close()`, since they use what it closes.
 */
export async function startWatchers(
  deps: CatalogDependencies,
  {
    config,
    logger,
  }: {
    config: Pick<CatalogConfig, 'WEBHOOK_WORKER' | 'CHANGES_RETENTION_DAYS'>;
    logger: Logger;
  },
): Promise<() => Promise<void>> {
  const { store, webhooks } = deps;
  const { feed } = deps.changes;
  const unfollowCatalog = await followCatalogChanges(store, feed, {
    pollMs: VERSION_POLL_MS,
    logger,
  });
  const unfollowKeyStatus = await followKeyStatus(webhooks.subscriptions, feed, logger);
  const stopPruning = pruneChangesRegularly(store, {
    retentionDays: config.CHANGES_RETENTION_DAYS,
    logger,
  });
  const delivering = config.WEBHOOK_WORKER !== 'off';
  let dispatcher: OutboxDispatcher | undefined;
  if (delivering) {
    await webhooks.worker.start();
    dispatcher = await OutboxDispatcher.start({
      store,
      subscriptions: webhooks.subscriptions,
      queue: webhooks.queue,
      cursor: webhooks.cursor,
      feed,
      logger,
    });
  }

  return async () => {
    stopPruning();
    unfollowKeyStatus();
    await dispatcher?.stop();
    // Attempts under way finish here. webhooks.close() closes the worker again, a no-op then,
    // because it must also close a worker that never started.
    if (delivering) await webhooks.worker.close();
    unfollowCatalog();
  };
}
