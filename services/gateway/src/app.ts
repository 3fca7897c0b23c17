import cors from '@fastify/cors';
import { trace } from '@opentelemetry/api';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import type { Logger } from 'pino';
import { errorHandlerPlugin } from '../../shared/error-handler';
import { baseFastifyOptions } from '../../shared/http-server';
import { parseJsonAsUtf8 } from '../../shared/json-body-parser';
import { httpMetricsOf, httpMetricsPlugin } from '../../shared/metrics';
import { accessLogOf, requestLogPlugin } from '../../shared/request-log';
import { requestIdPlugin } from '../../shared/request-id';
import { type GatewayConfig, quotasFrom, trustProxySetting } from './config';
import type { GatewayDependencies } from './dependencies';
import { gatewayGuard } from './guard/gateway-guard';
import { clientAddressPlugin } from './plugins/client-address';
import { corsOptions, corsWithoutOrigin } from './plugins/cors';
import { denyByDefaultPlugin } from './plugins/deny-by-default';
import { readinessPlugin } from './plugins/readiness';
import { API_REFERENCE_PREFIX, apiReferenceRoutes } from './routes/api-reference';
import { catalogRoutes } from './routes/catalog';
import { keyApiRoutes } from './routes/key-api';
import { mcpRoutes } from './routes/mcp';
import { oauthRoutes } from './routes/oauth';
import { portalRoutes } from './routes/portal';
import { REGISTRATION_BODY_LIMIT } from './routes/register';
import { createUpstream } from './proxy/read-catalog';
import { answerCachedFirst, cachedAnswerPath } from './routes/cached-answer-path';
import { CATALOG_ROUTES } from '../../shared/contract';

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

/** Everything the gateway serves, in order, on an instance of createGatewayInstance. */
export async function configureGateway(
  app: GatewayInstance,
  { config, deps, tracing = false }: GatewayAppOptions,
): Promise<void> {
  const guard = gatewayGuard(config, deps);
  // Before any route: every route from here on is guarded unless it says `config.public`.
  await app.register(denyByDefaultPlugin, {
    guard: guard.guard,
    check: guard.check,
    identify: guard.identify,
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
  await app.register(cors, corsOptions(config.CORS_ORIGINS));
  await app.register(readinessPlugin, { config, deps });
  await app.register(apiReferenceRoutes, { publicUrl: config.PUBLIC_URL });
  await app.register(portalRoutes, { quotas: quotasFrom(config), publicUrl: config.PUBLIC_URL });
  await app.register(keyApiRoutes, { config, deps });
  await app.register(oauthRoutes, {
    provider: deps.oauth.provider,
    publicUrl: config.PUBLIC_URL.replace(/\/$/, ''),
    keyCache: deps.keyCache,
    keyStore: deps.keyStore,
  });
  const upstream = createUpstream({
    client: deps.catalog,
    internalToken: config.INTERNAL_TOKEN,
    metrics: deps.metrics,
    cache: deps.responseCache,
    replaceTraceHeaders: tracing,
  });
  await app.register(mcpRoutes, {
    upstream,
    charge: guard.charge,
    standing: guard.standing,
    headersOnRefusal: guard.headersOnRefusal,
    metrics: deps.metrics,
    searches: deps.searchRecorder,
  });
  await app.register(catalogRoutes, { upstream, quota: guard, searches: deps.searchRecorder });
  const { responseCache } = deps;
  if (responseCache !== undefined) {
    // At ready, when every route is known, so a URL is routed as Fastify would route it.
    app.addHook('onReady', async () => {
      const root = app.log as Logger;
      const path = cachedAnswerPath({
        routes: app.routeSecurity,
        catalogRoutes: CATALOG_ROUTES,
        routerOptions: baseFastifyOptions().routerOptions ?? {},
        guard,
        quota: deps.quota,
        cache: responseCache,
        hits: upstream.hits,
        cors: corsWithoutOrigin(config.CORS_ORIGINS),
        // Without a logger (`logger: false`) Fastify's stand-in has no levels and writes nothing.
        ...(typeof root.isLevelEnabled === 'function'
          ? { accessLog: accessLogOf(root), log: root }
          : { accessLog: undefined, log: undefined }),
        httpMetrics: httpMetricsOf(deps.registry),
        searches: deps.searchRecorder,
        draining: () => app.draining,
        tracer: tracing ? trace.getTracer('tool-directory-gateway') : undefined,
      });
      answerCachedFirst(app.server, path);
    });
  }
}
