// Tracing first: it must patch modules before they load.
import { telemetry, tracing } from './observability/instrumentation';
import { StorageSpace } from '../../shared/embedded/storage-space';
import { createLogger } from '../../shared/logger';
import { runServer } from '../../shared/http-server';
import { createRegistry } from '../../shared/metrics';
import { buildCatalogApp } from './app';
import { loadCatalogConfig } from './config';
import { loadDatasetMeta } from './records/dataset';
import { createStore } from './store/create-store';
import { instrumentStore } from './store/instrumented-store';
import { openCatalogChanges } from './changes/open-catalog-changes';
import { openWebhooks } from './webhooks/open-webhooks';

async function main(): Promise<void> {
  const config = loadCatalogConfig();
  const logger = createLogger({
    service: 'catalog',
    level: config.LOG_LEVEL,
    pretty: config.LOG_PRETTY,
    traceIds: tracing.enabled,
  });
  logger.info({ tracing }, tracing.enabled ? 'tracing on' : 'tracing off');
  const registry = createRegistry('catalog');
  const store = instrumentStore(await createStore(config), registry);
  const changes = await openCatalogChanges(config, store, logger);
  const webhooks = await openWebhooks(config, {
    store,
    feed: changes.feed,
    redis: changes.redis,
    logger,
    registry,
  });
  const app = await buildCatalogApp({
    store,
    meta: loadDatasetMeta(),
    internalToken: config.INTERNAL_TOKEN,
    adminToken: config.ADMIN_TOKEN,
    changes: changes.service,
    webhooks: webhooks.routes,
    quotaWarnings: webhooks.quotaWarnings,
    api: config.WEBHOOK_WORKER !== 'only',
    storage: new StorageSpace(config.DATA_DIR),
    logger,
    registry,
  });
  await runServer({
    app,
    port: config.CATALOG_PORT,
    host: config.HOST,
    shutdownDelayMs: config.SHUTDOWN_DELAY_MS,
    metrics: { registry, port: config.METRICS_PORT },
    telemetry,
    onClosed: async () => {
      await webhooks.close();
      await changes.close();
      await store.close();
    },
  });
  logger.info(
    {
      store: store.kind,
      changeFeed: changes.feed.kind,
      version: store.version,
      admin: config.ADMIN_TOKEN !== undefined,
      webhookWorker: config.WEBHOOK_WORKER,
    },
    'catalog ready',
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
