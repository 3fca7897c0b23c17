// Tracing first: it must patch modules before they load.
import { telemetry, tracing } from './observability/instrumentation';
import { createLogger } from '../../shared/logger';
import { runServer } from '../../shared/http-server';
import { buildGatewayApp } from './app';
import { loadGatewayConfig } from './config';
import { redisTarget } from '../../shared/redis-config';
import { createGatewayDependencies } from './dependencies';
import { startWatchers } from './watchers';

async function main(): Promise<void> {
  const config = loadGatewayConfig();
  const logger = createLogger({
    service: 'gateway',
    level: config.LOG_LEVEL,
    pretty: config.LOG_PRETTY,
    // No async context at the gateway: its request lines take the ids from the request instead.
    traceIds: false,
  });
  logger.info({ tracing }, tracing.enabled ? 'tracing on' : 'tracing off');
  const deps = await createGatewayDependencies(config, { logger });
  const stopWatchers = await startWatchers(deps, { config, logger });
  const app = await buildGatewayApp({ config, deps, logger, tracing: telemetry !== undefined });
  await runServer({
    app,
    port: config.PORT,
    host: config.HOST,
    shutdownDelayMs: config.SHUTDOWN_DELAY_MS,
    metrics: { registry: deps.registry, port: config.METRICS_PORT },
    telemetry,
    onClosed: async () => {
      await stopWatchers();
      await deps.close();
    },
  });
  const redis = redisTarget(config).target;
  logger.info(
    {
      keyStore: deps.keyStore.kind,
      quotas: redis ? 'redis' : 'memory',
      ...(redis && { redis: redis.mode }),
      catalog: config.CATALOG_URL,
    },
    'gateway ready',
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
