import cors from '@fastify/cors';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import type { Logger } from 'pino';
import '../../shared/contract';
import { loadDatasetMeta } from '../../catalog/src/records/dataset';
import { errorHandlerPlugin } from '../../shared/error-handler';
import { healthPlugin } from '../../shared/health';
import { baseFastifyOptions } from '../../shared/http-server';
import { parseJsonAsUtf8 } from '../../shared/json-body-parser';
import { httpMetricsPlugin } from '../../shared/metrics';
import { requestLogPlugin } from '../../shared/request-log';
import { REQUEST_ID_HEADER, requestIdPlugin } from '../../shared/request-id';
import { type GatewayConfig, quotasFrom, trustProxySetting } from './config';
import type { GatewayDependencies } from './dependencies';
import { createApiKeyGuard } from './guard/api-key-guard';
import { clientAddressPlugin } from './plugins/client-address';
import { denyByDefaultPlugin } from './plugins/deny-by-default';
import { RATE_LIMIT_HEADERS } from './quota/rate-limit-headers';
import { API_REFERENCE_PREFIX, apiReferenceRoutes } from './routes/api-reference';
import { catalogRoutes } from './routes/catalog';
import { keyRoutes } from './routes/keys';
import { leakRoutes } from './routes/leaks';
import { mcpRoutes } from './routes/mcp';
import { portalRoutes } from './routes/portal';
import { usageRoutes } from './routes/usage';
import { REGISTRATION_BODY_LIMIT, registerRoutes } from './routes/register';
import { createUpstream } from './proxy/read-catalog';
import { watchCatalogReadiness } from './proxy/catalog-readiness';

export interface GatewayAppOptions {
  config: GatewayConfig;
  deps: GatewayDependencies;
  logger: Logger | false;
  /** Tracing is on: the tracer, not the client, sets the traceparent sent to the catalog. */
  tracing?: boolean;
}

/** The gateway's Fastify instance, with no route yet. */
export function createGatewayInstance({
  config,
  logger,
}: Pick<GatewayAppOptions, 'config' | 'logger'>) {
  return Fastify({
    ...baseFastifyOptions(),
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    trustProxy: trustProxySetting(config.TRUST_PROXY),
    bodyLimit: REGISTRATION_BODY_LIMIT,
  }).withTypeProvider<TypeBoxTypeProvider>();
}

export type GatewayInstance = ReturnType<typeof createGatewayInstance>;

/** Builds the gateway without listening: server.ts listens, tests use `inject` or `listen(0)`. */
export async function buildGatewayApp(options: GatewayAppOptions): Promise<GatewayInstance> {
  const app = createGatewayInstance(options);
  await configureGateway(app, options);
  return app;
}

/** Everything the gateway serves, on an instance of createGatewayInstance. */
export async function configureGateway(
  app: GatewayInstance,
  { config, deps, tracing = false }: GatewayAppOptions,
): Promise<void> {
  const quotas = quotasFrom(config);
  const guard = createApiKeyGuard({
    keys: deps.keyCache,
    unknownKeys: deps.unknownKeys,
    quota: deps.quota,
    quotas,
    metrics: deps.metrics,
    portalUrl: `${config.PUBLIC_URL.replace(/\/$/, '')}/`,
    onAdmitted: (keyId, tier, decision) => {
      deps.quotaWarnings.observe(keyId, tier, decision);
      deps.lastUse.note(keyId);
    },
  });
  app.decorateRequest('caller', null);
  app.decorateRequest('keyRecord', null);
  // Before any route: every route from here on is guarded unless it says `config.public`.
  await app.register(denyByDefaultPlugin, {
    guard: guard.guard,
    check: guard.check,
    publicPrefixes: [API_REFERENCE_PREFIX],
  });
  // The API takes JSON only: any other body is a 415 (docs/api.md#api-keys-and-registration), not
  // parsed as text; and JSON only in UTF-8.
  app.removeContentTypeParser('text/plain');
  parseJsonAsUtf8(app);
  await app.register(clientAddressPlugin);
  await app.register(requestIdPlugin);
  // An unknown path asked with a key is counted and gets the rate-limit headers
  // (docs/api.md#quotas-and-rate-limit-headers); without a key it is a plain 404.
  await app.register(errorHandlerPlugin, {
    notFoundPreHandler: async (request, reply) => {
      if (request.headers['x-api-key'] !== undefined) await guard.guard(request, reply);
    },
    storage: deps.storage,
  });
  await app.register(requestLogPlugin, { traceIdsFromRequest: tracing });
  await app.register(httpMetricsPlugin, { registry: deps.registry });
  await app.register(cors, {
    origin: config.CORS_ORIGINS === '*' ? '*' : config.CORS_ORIGINS.split(',').map((o) => o.trim()),
    methods: ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'],
    allowedHeaders: [
      'x-api-key',
      'content-type',
      'if-none-match',
      'mcp-protocol-version',
      REQUEST_ID_HEADER,
      'traceparent',
      'tracestate',
    ],
    exposedHeaders: [
      ...RATE_LIMIT_HEADERS,
      'X-Request-Id',
      'ETag',
      'X-Cache',
      'WWW-Authenticate',
      'Content-Disposition',
    ],
    maxAge: 86_400,
    // A bare OPTIONS (no Origin or requested method) gets the same 204, not a text/plain 400.
    strictPreflight: false,
  });
  // Ready when keys can be checked, the catalog has been ready since this gateway started and it
  // takes this gateway's token (proxy/catalog-readiness.ts: checked in the background, so
  // /readyz never waits for the catalog). The reasons are the public port's: no addresses in them.
  const catalogReadiness = watchCatalogReadiness({
    client: deps.catalog,
    internalToken: config.INTERNAL_TOKEN,
    logger: app.log,
    tokenRefused: deps.metrics.internalTokenRefused,
  });
  app.addHook('onClose', async () => catalogReadiness.stop());
  await app.register(healthPlugin, {
    ready: async () => {
      await deps.keyStore.ping().catch((err: unknown) => {
        throw new Error('the key store cannot be reached', { cause: err });
      });
      const catalogProblem = catalogReadiness.problem();
      if (catalogProblem !== undefined) throw new Error(catalogProblem);
    },
    writes: () => deps.storage.problem(),
    quotas: () => deps.quota.problem(),
  });
  await app.register(apiReferenceRoutes, { publicUrl: config.PUBLIC_URL });
  await app.register(portalRoutes, { quotas, publicUrl: config.PUBLIC_URL });
  const attribution = loadDatasetMeta().attribution;
  await app.register(usageRoutes, {
    quota: deps.quota,
    quotas,
    attribution,
    lastUse: deps.lastUse,
  });
  await app.register(keyRoutes, {
    store: deps.keyStore,
    announce: deps.announceKeyChange,
    maxLifetimeDays: config.KEY_MAX_LIFETIME_DAYS,
    attribution,
  });
  await app.register(leakRoutes, {
    store: deps.keyStore,
    scanningKeys: deps.scanningKeys,
    attempts: deps.leakReports,
    attemptsPerMinute: config.LEAK_REPORTS_PER_MINUTE,
    announce: deps.announceKeyChange,
  });
  await app.register(registerRoutes, {
    store: deps.keyStore,
    freeQuota: quotas.free,
    attempts: deps.registrations,
    attemptsPerHour: config.REGISTRATIONS_PER_HOUR,
    announce: deps.announceKeyChange,
    maxLifetimeDays: config.KEY_MAX_LIFETIME_DAYS,
  });
  const upstream = createUpstream({
    client: deps.catalog,
    internalToken: config.INTERNAL_TOKEN,
    metrics: deps.metrics,
    cache: deps.responseCache,
    replaceTraceHeaders: tracing,
  });
  await app.register(mcpRoutes, { upstream, charge: guard.charge, metrics: deps.metrics });
  await app.register(catalogRoutes, { upstream });
}
