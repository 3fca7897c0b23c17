// Tracing first: it must patch modules before they load.
import { telemetry, tracing } from './observability/instrumentation';
import { createLogger } from '../../shared/logger';
import { runServer } from '../../shared/http-server';
import { buildCatalogApp } from './app';
import { loadCatalogConfig } from './config';
import { loadDatasetMeta } from './records/dataset';
import { createCatalogDependencies } from './dependencies';
import { startWatchers } from './watchers';

async function main(): Promise<void> {
  const config = loadCatalogConfig();
  const logger = createLogger({
    service: 'catalog',
    level: config.LOG_LEVEL,
    pretty: config.LOG_PRETTY,
    traceIds: tracing.enabled,
  });
  logger.info({ tracing }, tracing.enabled ? 'tracing on' : 'tracing off');
  const deps = await createCatalogDependencies(config, { logger });
  const stopWatchers = await startWatchers(deps, { config, logger });
  const { store, changes, webhooks, registry } = deps;
  const app = await buildCatalogApp({
    store,
    meta: loadDatasetMeta(),
    internalToken: config.INTERNAL_TOKEN,
    adminToken: config.ADMIN_TOKEN,
    changes: changes.service,
    webhooks: webhooks.routes,
    quotaWarnings: webhooks.quotaWarnings,
    api: config.WEBHOOK_WORKER !== 'only',
    changesRetentionDays: config.CHANGES_RETENTION_DAYS,
    storage: deps.storage,
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
      await stopWatchers();
      await deps.close();
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
