import pino from 'pino';
import { loggerOptions } from '../../shared/logger';
import { runServer } from '../../shared/http-server';
import { buildCatalogApp } from './app';
import { loadCatalogConfig } from './config';
import { loadDataset } from './dataset';
import { createStore } from './store/create-store';

async function main(): Promise<void> {
  const config = loadCatalogConfig();
  const logger = pino(
    loggerOptions({ service: 'catalog', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY }),
  );
  const dataset = loadDataset();
  const store = await createStore(config, () => dataset.tools);
  const app = await buildCatalogApp({
    store,
    meta: dataset.meta,
    internalToken: config.INTERNAL_TOKEN,
    logger,
  });
  await runServer({
    app,
    port: config.CATALOG_PORT,
    host: config.HOST,
    shutdownDelayMs: config.SHUTDOWN_DELAY_MS,
    onClosed: () => store.close(),
  });
  logger.info({ store: store.kind, tools: dataset.tools.length }, 'catalog ready');
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
