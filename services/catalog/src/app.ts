import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { errorHandlerPlugin } from '../../shared/error-handler';
import { healthPlugin } from '../../shared/health';
import { httpMetricsPlugin } from '../../shared/metrics';
import { baseFastifyOptions } from '../../shared/http-server';
import { requestLogPlugin } from '../../shared/request-log';
import { requestIdPlugin } from '../../shared/request-id';
import type { CatalogContext } from './catalog-context';
import type { CatalogChanges } from './changes/catalog-changes';
import { adminRoutes } from './routes/admin';
import { internalAuthPlugin } from './plugins/internal-auth';
import { openapiPlugin } from './plugins/openapi';
import { responseCachePlugin } from './plugins/response-cache';
import { categoryRoutes } from './routes/categories';
import { compareRoutes } from './routes/compare';
import { exportRoutes } from './routes/export';
import { searchRoutes } from './routes/search';
import { toolRoutes } from './routes/tools';

export interface CatalogAppOptions extends CatalogContext {
  internalToken: string;
  /** Enables the admin endpoints; without it they do not exist (SPEC B9). */
  adminToken?: string | undefined;
  /** Operator changes: the admin endpoints' code path (the same as the catalog CLI's). */
  changes?: CatalogChanges | undefined;
  logger: Logger | false;
  /** Where HTTP metrics go; none in tests that do not look at them. */
  registry?: Registry;
}

/** Builds the catalog service without listening: server.ts listens, tests use `inject`. */
export async function buildCatalogApp(options: CatalogAppOptions): Promise<FastifyInstance> {
  const { store, meta, internalToken, adminToken, changes, logger, registry } = options;
  const app = Fastify({
    ...baseFastifyOptions(),
    ...(logger ? { loggerInstance: logger } : { logger: false }),
  }).withTypeProvider<TypeBoxTypeProvider>();

  await app.register(requestIdPlugin);
  await app.register(errorHandlerPlugin);
  await app.register(requestLogPlugin);
  if (registry) await app.register(httpMetricsPlugin, { registry });
  await app.register(internalAuthPlugin, { token: internalToken, adminToken });
  await app.register(responseCachePlugin, { maxEntries: 2_000, store });
  await app.register(openapiPlugin);
  await app.register(healthPlugin, { ready: () => store.ping() });

  const context: CatalogContext = { store, meta };
  await app.register(
    async (v1) => {
      await v1.register(toolRoutes, context);
      await v1.register(categoryRoutes, context);
      await v1.register(searchRoutes, context);
      await v1.register(compareRoutes, context);
      await v1.register(exportRoutes, context);
    },
    { prefix: '/v1' },
  );
  if (adminToken !== undefined && changes) {
    await app.register(adminRoutes, { prefix: '/admin/v1', changes });
  }
  return app;
}
