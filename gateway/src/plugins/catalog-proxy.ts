import replyFrom, {
  type FastifyReplyFromHooks,
  type FastifyReplyFromOptions,
} from '@fastify/reply-from';
import type {
  FastifyError,
  FastifyInstance,
  FastifyRequest,
  onRequestAsyncHookHandler,
} from 'fastify';
import fp from 'fastify-plugin';
import type { IncomingHttpHeaders } from 'node:http';
import '../../../services/shared/caller';
import { CATALOG_ROUTES } from '../../../services/shared/catalog-routes';
import { routeNotFound } from '../../../services/shared/error-handler';
import { Errors } from '../../../services/shared/errors';
import { REQUEST_ID_HEADER } from '../../../services/shared/request-id';
import { INTERNAL_HEADERS } from '../../../services/shared/tiers';
import type { GatewayMetrics } from '../metrics';

export interface CatalogProxyOptions {
  catalogUrl: string;
  internalToken: string;
  timeoutMs: number;
  metrics: GatewayMetrics;
  /**
   * Drop the client's traceparent/tracestate, because the tracer injects its own (one
   * traceparent, never two). Without tracing they pass through, so the trace is not cut.
   */
  replaceTraceHeaders: boolean;
  /** The API key guard: runs first on every proxied request, before the body is read. */
  guard: onRequestAsyncHookHandler;
}

declare module 'fastify' {
  interface FastifyRequest {
    upstreamStart: number;
  }
}

/** Codes of undici and reply-from failures, by the answer the client gets (SPEC B5). */
const TIMEOUT_CODES = new Set([
  'FST_REPLY_FROM_GATEWAY_TIMEOUT',
  'FST_REPLY_FROM_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const UNAVAILABLE_CODES = new Set([
  'FST_REPLY_FROM_SERVICE_UNAVAILABLE',
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

function upstreamError(error: FastifyError): {
  kind: 'timeout' | 'unavailable' | 'bad_gateway';
  error: Error;
} {
  const codes = [error.code, (error.cause as { code?: string } | undefined)?.code];
  if (codes.some((c) => c && TIMEOUT_CODES.has(c)))
    return { kind: 'timeout', error: new Errors.upstreamTimeout() };
  if (codes.some((c) => c && UNAVAILABLE_CODES.has(c))) {
    return { kind: 'unavailable', error: new Errors.upstreamUnavailable() };
  }
  return { kind: 'bad_gateway', error: new Errors.upstreamBadGateway() };
}

const HOP_BY_HOP = ['expect', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade'];
/** The catalog's connection headers describe the gateway's pool, not the client's connection. */
const HOP_BY_HOP_RESPONSE = ['connection', 'keep-alive', 'proxy-connection', 'trailer', 'upgrade'];

/**
 * reply-from refuses, before any upstream call, a path it cannot decode or one that decodes to
 * `..` segments (path traversal); the client gets the API's 400, not reply-from's wording.
 */
function unforwardable(err: unknown): unknown {
  if (err instanceof URIError || (err as { code?: string }).code === 'ERR_INVALID_URL') {
    return new Errors.badUrl();
  }
  if ((err as { statusCode?: number }).statusCode === 400) return new Errors.pathTraversal();
  return err;
}

/** reply-from's settings for the catalog: a keep-alive undici pool, bounded waits. */
export function upstreamOptions(catalogUrl: string, timeoutMs: number): FastifyReplyFromOptions {
  return {
    base: catalogUrl,
    disableRequestLogging: true,
    undici: {
      connections: 128,
      pipelining: 1,
      keepAliveTimeout: 60_000,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    },
  };
}

/**
 * Forwards the catalog's routes, and anything else under `/v1`, to the catalog over a
 * keep-alive undici pool. The caller's identity goes in
 * headers only the gateway sets, next to the internal token; whatever a client sent under those
 * names, its API key and its trace headers are dropped (the tracer injects the one traceparent).
 */
export const catalogProxyPlugin = fp<CatalogProxyOptions>(
  async function catalogProxy(
    app: FastifyInstance,
    { catalogUrl, internalToken, timeoutMs, metrics, replaceTraceHeaders, guard },
  ) {
    await app.register(replyFrom, upstreamOptions(catalogUrl, timeoutMs));
    app.decorateRequest('upstreamStart', 0);

    const rewriteRequestHeaders: FastifyReplyFromHooks['rewriteRequestHeaders'] = (
      request,
      headers,
    ) => {
      delete headers['x-api-key'];
      // Hop-by-hop headers are this connection's business, not the catalog's (RFC 9110 7.6.1);
      // undici refuses some of them outright (expect, upgrade, keep-alive).
      for (const name of HOP_BY_HOP) delete headers[name];
      if (replaceTraceHeaders) {
        delete headers.traceparent;
        delete headers.tracestate;
      }
      headers[INTERNAL_HEADERS.token] = internalToken;
      headers[INTERNAL_HEADERS.tier] = request.caller!.tier;
      headers[INTERNAL_HEADERS.keyId] = request.caller!.keyId;
      headers[REQUEST_ID_HEADER] = request.id;
      return headers;
    };

    const observe = (
      request: Pick<FastifyRequest, 'upstreamStart' | 'routeOptions'>,
      status: number | string,
    ) => {
      const seconds = (performance.now() - request.upstreamStart) / 1000;
      metrics.upstreamDuration
        .labels(request.routeOptions.url ?? 'unmatched', String(status))
        .observe(seconds);
    };

    const proxyOptions: FastifyReplyFromHooks = {
      rewriteRequestHeaders,
      rewriteHeaders: (headers) => {
        for (const name of HOP_BY_HOP_RESPONSE) delete headers[name];
        // Copied, the catalog's Vary (accept-encoding) would replace the guard's: joined below.
        const { vary, ...others } = headers;
        return vary === undefined ? headers : others;
      },
      onResponse: (request, reply, res) => {
        observe(request, res.statusCode);
        // reply-from's typings miss it: `res` is { statusCode, headers, stream }.
        const { vary } = (res as unknown as { headers: IncomingHttpHeaders }).headers;
        if (vary !== undefined) reply.header('vary', `${String(reply.getHeader('vary'))}, ${vary}`);
        reply.send(res.stream);
      },
      onError: (reply, { error }) => {
        const failure = upstreamError(error as FastifyError);
        observe(reply.request, 'error');
        metrics.upstreamErrors.labels(failure.kind).inc();
        reply.request.log.warn({ err: error, kind: failure.kind }, 'catalog call failed');
        reply.send(failure.error);
      },
    };

    // Every catalog route is a read; anything else under /v1 reaches the catalog's 404.
    for (const url of [...CATALOG_ROUTES, '/v1/*']) {
      app.route({
        method: ['GET', 'HEAD'],
        url,
        schema: { hide: true },
        // The key is checked before the body is read: no key, no parsing (401, not 400).
        onRequest: guard,
        handler(request, reply) {
          request.upstreamStart = performance.now();
          try {
            // No source: reply-from forwards the request's own path, from its URL cache, and
            // passes the query string through as sent; the catalog validates it. A request
            // line in absolute form (`GET http://host/v1/…`) is forwarded by its path.
            const source = request.url.startsWith('/') ? undefined : new URL(request.url).pathname;
            return reply.from(source, proxyOptions);
          } catch (err) {
            throw unforwardable(err);
          }
        },
      });
    }

    // The catalog has no other methods: answered here, with the key checked and counted, and
    // the body never parsed, so it is a 404 whatever the body is.
    await app.register(async function otherMethods(scope) {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
      scope.route({
        method: ['POST', 'PUT', 'PATCH', 'DELETE'],
        url: '/v1/*',
        schema: { hide: true },
        onRequest: guard,
        handler(request) {
          throw routeNotFound(request);
        },
      });
    });
  },
  { name: 'catalog-proxy', dependencies: [] },
);
