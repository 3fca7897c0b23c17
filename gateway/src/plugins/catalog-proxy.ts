import replyFrom, {
  type FastifyReplyFromHooks,
  type FastifyReplyFromOptions,
} from '@fastify/reply-from';
import type {
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RouteShorthandOptions,
  onRequestAsyncHookHandler,
} from 'fastify';
import fp from 'fastify-plugin';
import type { IncomingHttpHeaders } from 'node:http';
import '../../../services/shared/caller';
import { CATALOG_ROUTES } from '../../../services/shared/catalog-routes';
import { routeNotFound } from '../../../services/shared/error-handler';
import { Errors } from '../../../services/shared/errors';
import { REQUEST_ID_HEADER } from '../../../services/shared/request-id';
import { INTERNAL_HEADERS, type Tier, tierAtLeast } from '../../../services/shared/tiers';
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

type FailureKind = 'timeout' | 'unavailable' | 'bad_gateway';

function upstreamError(error: FastifyError): { kind: FailureKind; error: Error } {
  const codes = [error.code, (error.cause as { code?: string } | undefined)?.code];
  if (codes.some((c) => c && TIMEOUT_CODES.has(c)))
    return { kind: 'timeout', error: new Errors.upstreamTimeout() };
  if (codes.some((c) => c && UNAVAILABLE_CODES.has(c))) {
    return { kind: 'unavailable', error: new Errors.upstreamUnavailable() };
  }
  return { kind: 'bad_gateway', error: new Errors.upstreamBadGateway() };
}

/**
 * The catalog connection closed or reset before any byte of the answer (undici reports a failure
 * after the headers on the body stream, never here), so the request may never have been read:
 * typically a keep-alive connection the catalog closed as idle, on shutdown, while the request
 * was on its way. Such a request is sent again, once, if it is idempotent (RFC 9112 9.3.1).
 */
const CONNECTION_LOST = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);
const IDEMPOTENT_METHODS = ['GET', 'HEAD'] as const;
/**
 * Long enough for the pool to have seen the other connections the catalog closed at the same
 * moment, so the retry goes out on a fresh connection rather than another closed one.
 */
const RETRY_DELAY_MS = 10;

/** A bodiless route (GET, DELETE) has nothing to send: a stray body is kept small. */
const BODILESS_LIMIT = 1024;

/** A 403 for callers below the route's tier (SPEC B3), after the key guard has run. */
function tierGuard(minimum: Tier): onRequestAsyncHookHandler {
  const refusal =
    minimum === 'enterprise' ? Errors.enterpriseTierRequired : Errors.paidTierRequired;
  return async (request) => {
    if (!tierAtLeast(request.caller!.tier, minimum)) throw new refusal();
  };
}

/** How often each kind of upstream failure is logged; the metric counts every one. */
const FAILURE_LOG_WINDOW_MS = 10_000;

/**
 * At most one log line per key in each window; the events in between are counted and the next
 * line reports how many it stands for.
 */
export class LogThrottle<Key> {
  private readonly windows = new Map<Key, { until: number; suppressed: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Undefined: do not log. A number: log now, saying that many were left out before. */
  admit(key: Key): number | undefined {
    const now = this.now();
    const window = this.windows.get(key);
    if (window && now < window.until) {
      window.suppressed += 1;
      return undefined;
    }
    this.windows.set(key, { until: now + this.windowMs, suppressed: 0 });
    return window?.suppressed ?? 0;
  }
}

/** reply-from's own warn line for every failed call, which it has no option to turn off. */
const REPLY_FROM_ERROR_LINE = 'response errored';

/**
 * The proxy routes' request logger: reply-from's line for each failed catalog call goes to debug,
 * since the proxy's error path writes the rate-limited one. The override sits on an object of
 * its own, as a disabled logger's child() hands back the one shared instance.
 */
const proxyRequestLogger: NonNullable<RouteShorthandOptions['childLoggerFactory']> = (
  logger,
  bindings,
  options,
) => {
  const log = logger.child(bindings, options);
  const warn: typeof log.warn = (obj: unknown, msg?: string, ...args: unknown[]) =>
    msg === REPLY_FROM_ERROR_LINE ? log.debug(obj, msg) : log.warn(obj, msg, ...args);
  return Object.create(log, { warn: { value: warn } }) as typeof log;
};

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
    retryMethods: [...IDEMPOTENT_METHODS],
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

    const failureLog = new LogThrottle<FailureKind>(FAILURE_LOG_WINDOW_MS);
    const proxyOptions: FastifyReplyFromHooks = {
      rewriteRequestHeaders,
      // reply-from calls this before it gives up on a call; its default still retries a GET the
      // catalog answered 503 (a catalog closing answers so on a connection it has not closed yet).
      retryDelay: ({ err, req, res, attempt, getDefaultDelay }) => {
        const code = (err as { code?: string } | null)?.code;
        const idempotent = (IDEMPOTENT_METHODS as readonly string[]).includes(req.method);
        if (attempt === 0 && idempotent && code && CONNECTION_LOST.has(code)) {
          metrics.upstreamRetries.labels(code).inc();
          return RETRY_DELAY_MS;
        }
        return getDefaultDelay(req, res, err, attempt);
      },
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
        // While the catalog is down every request fails alike: one line per kind and window.
        const suppressed = failureLog.admit(failure.kind);
        if (suppressed !== undefined) {
          reply.request.log.warn(
            { err: error, kind: failure.kind, suppressed },
            'catalog call failed',
          );
        }
        reply.send(failure.error);
      },
    };

    const forward = (request: FastifyRequest, reply: FastifyReply) => {
      request.upstreamStart = performance.now();
      try {
        // No source: reply-from forwards the request's own path, from its URL cache, and
        // passes the query string through as sent; the catalog validates it. A request
        // line in absolute form (`GET http://host/v1/…`) is forwarded by its path.
        const source = request.url.startsWith('/') ? undefined : new URL(request.url).pathname;
        // A body is forwarded as the bytes that came (reply-from would re-encode a Buffer as
        // JSON); only the few routes that take one pay for the extra options object.
        if (Buffer.isBuffer(request.body)) {
          return reply.from(source, {
            ...proxyOptions,
            body: request.body,
            contentType: request.headers['content-type'] ?? 'application/octet-stream',
          });
        }
        return reply.from(source, proxyOptions);
      } catch (err) {
        throw unforwardable(err);
      }
    };

    // The catalog's routes, from the one table: the key (and the tier the route needs) is
    // checked before any body is read, so no key is a 401 and a low tier a 403, never a 400.
    // Bodies are forwarded as bytes, never parsed here: the catalog validates them.
    await app.register(async function catalogRoutes(scope) {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) =>
        done(null, body),
      );
      for (const route of CATALOG_ROUTES) {
        scope.route({
          method: route.method === 'GET' ? ['GET', 'HEAD'] : route.method,
          url: route.url,
          schema: { hide: true },
          bodyLimit: route.bodyLimit ?? BODILESS_LIMIT,
          childLoggerFactory: proxyRequestLogger,
          onRequest: route.tier === 'free' ? guard : [guard, tierGuard(route.tier)],
          handler: forward,
        });
      }
    });

    // Any other read under /v1 reaches the catalog, for its own 404.
    app.route({
      method: ['GET', 'HEAD'],
      url: '/v1/*',
      schema: { hide: true },
      childLoggerFactory: proxyRequestLogger,
      onRequest: guard,
      handler: forward,
    });

    // Other methods elsewhere under /v1: answered here, with the key checked and counted, and
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
