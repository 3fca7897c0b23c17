import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { StorageSpace } from '../../shared/embedded/storage-space';
import { errorHandlerPlugin } from '../../shared/error-handler';
import { INTERNAL_PATHS } from '../../shared/contract';
import { healthPlugin } from '../../shared/health';
import { parseJsonAsUtf8 } from '../../shared/json-body-parser';
import { httpMetricsPlugin } from '../../shared/metrics';
import { baseFastifyOptions } from '../../shared/http-server';
import { requestLogPlugin } from '../../shared/request-log';
import { requestIdPlugin } from '../../shared/request-id';
import type { CatalogContext } from './routes/catalog-context';
import { catalogReadiness } from './store/catalog-readiness';
import type { CatalogChanges } from './changes/catalog-changes';
import { DEFAULT_CHANGES_RETENTION_DAYS } from './config';
import { adminRoutes } from './routes/admin';
import { compressionPlugin } from './plugins/compression';
import { internalAuthPlugin } from './plugins/internal-auth';
import { routeContractPlugin } from './plugins/route-contract';
import { responseCachePlugin } from './plugins/response-cache';
import { catalogRoutes } from './routes';
import { internalCatalogVersionRoutes } from './routes/internal-catalog-version';
import { webhookRoutes } from './routes/webhooks';
import { internalQuotaWarningRoutes } from './routes/internal-quota-warnings';
import type { QuotaWarningRouteOptions, WebhookRoutesOptions } from './webhooks/webhook-types';

export interface CatalogAppOptions extends Omit<CatalogContext, 'changesRetentionDays'> {
  internalToken: string;
  /**
   * Enables the admin endpoints; without it they do not exist
   * (docs/api.md#catalog-changes-and-freshness).
   */
  adminToken?: string | undefined;
  /** Operator changes: the admin endpoints' code path (the same as the catalog CLI's). */
  changes?: CatalogChanges | undefined;
  logger: Logger | false;
  /** Where HTTP metrics go; none in tests that do not look at them. */
  registry?: Registry;
  /**
   * Enables the webhook endpoints (docs/api.md#enterprise-export-and-webhooks) with these
   * subscriptions and delivery queue.
   */
  webhooks?: WebhookRoutesOptions | undefined;
  /** Enables `POST /internal/v1/quota-warnings`: the gateway's quota warnings become webhooks. */
  quotaWarnings?: QuotaWarningRouteOptions | undefined;
  /** How long `GET /v1/changes` keeps a change; CHANGES_RETENTION_DAYS's default if unset. */
  changesRetentionDays?: number;
  /** Whether writes under DATA_DIR can succeed (a full disk), for readiness. */
  storage?: StorageSpace | undefined;
  /**
   * Serve the API (default). A webhook worker of its own (WEBHOOK_WORKER=only) serves only its
   * health endpoints.
   */
  api?: boolean;
}

/** Builds the catalog service without listening: server.ts listens, tests use `inject`. */
export async function buildCatalogApp(options: CatalogAppOptions): Promise<FastifyInstance> {
  const {
    store,
    meta,
    internalToken,
    adminToken,
    changes,
    logger,
    registry,
    webhooks,
    quotaWarnings,
    storage,
    api = true,
    changesRetentionDays = DEFAULT_CHANGES_RETENTION_DAYS,
  } = options;
  const app = Fastify({
    ...baseFastifyOptions(),
    ...(logger ? { loggerInstance: logger } : { logger: false }),
  }).withTypeProvider<TypeBoxTypeProvider>();

  parseJsonAsUtf8(app);
  await app.register(requestIdPlugin);
  await app.register(errorHandlerPlugin, { storage });
  await app.register(requestLogPlugin);
  if (registry) await app.register(httpMetricsPlugin, { registry });
  await app.register(internalAuthPlugin, { token: internalToken, adminToken });
  await app.register(routeContractPlugin);
  await app.register(compressionPlugin);
  await app.register(responseCachePlugin, { maxEntries: 2_000, store });
  await app.register(healthPlugin, {
    ready: catalogReadiness(store),
    writes: () => storage?.problem(),
    // What each gateway's readiness asks (a webhook worker of its own is no gateway's catalog).
    ...(api && { internalPath: INTERNAL_PATHS.readiness }),
  });

  if (!api) return app;
  await app.register(catalogRoutes, { prefix: '/v1', store, meta, changesRetentionDays });
  await app.register(internalCatalogVersionRoutes, { store });
  if (webhooks) await app.register(webhookRoutes, { prefix: '/v1', ...webhooks });
  if (adminToken !== undefined && changes) {
    await app.register(adminRoutes, { prefix: '/admin/v1', changes });
  }
  if (quotaWarnings) {
    await app.register(internalQuotaWarningRoutes, quotaWarnings);
  }
  return app;
}
