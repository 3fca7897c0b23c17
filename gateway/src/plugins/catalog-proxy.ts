import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
} from 'fastify';
import fp from 'fastify-plugin';
import '../../../services/shared/contract';
import { CATALOG_ROUTES, type CatalogRoute } from '../../../services/shared/contract';
import { CATALOG_VERSION_HEADER } from '../../../services/shared/contract';
import { ifNoneMatchMatches } from '../../../services/shared/entity-tags';
import { routeNotFound } from '../../../services/shared/error-handler';
import { Errors } from '../../../services/shared/errors';
import { propagateRequestTrace, tagUpstreamCall } from '../../../services/shared/span-attributes';
import { type Tier, tierAtLeast } from '../../../services/shared/tiers';
import { type CachedAnswer, type ResponseCache, cacheKey } from '../cache/response-cache';
import type { GatewayMetrics } from '../metrics';
import { type CatalogAnswer, discard } from '../upstream/catalog-answer';
import { type CatalogCall, type CatalogClient, UpstreamFailure } from '../upstream/catalog-client';
import { relayedHeaders, upstreamHeaders } from '../upstream/header-rules';
import { LogThrottle } from '../../../services/shared/log-throttle';

export interface CatalogProxyOptions {
  client: CatalogClient;
  internalToken: string;
  metrics: GatewayMetrics;
  /** The gateway's response cache; undefined when turned off (RESPONSE_CACHE=off). */
  cache: ResponseCache | undefined;
  /**
   * Drop the client's traceparent/tracestate, because the tracer injects its own (one
   * traceparent, never two). Without tracing they pass through, so the trace is not cut.
   */
  replaceTraceHeaders: boolean;
  /** The API key guard: runs first on every proxied request, before the body is read. */
  guard: onRequestAsyncHookHandler;
}

/** A bodiless route (GET, DELETE) has nothing to send: a stray body is kept small. */
const BODILESS_LIMIT = 1024;

/** How often each kind of upstream failure is logged; the metric counts every one. */
const FAILURE_LOG_WINDOW_MS = 10_000;

/** A 403 for callers below the route's tier (SPEC B3), after the key guard has run. */
function tierGuard(minimum: Tier): onRequestAsyncHookHandler {
  const refusal =
    minimum === 'enterprise' ? Errors.enterpriseTierRequired : Errors.paidTierRequired;
  return async (request) => {
    if (!tierAtLeast(request.caller!.tier, minimum)) throw new refusal();
  };
}

/**
 * The path and query sent to the catalog: the request's own, also when the request line was in
 * absolute form (`GET http://host/v1/…`). A path that cannot be decoded, or that decodes to `..`
 * segments (path traversal), is refused with the API's 400; the query goes as sent, and the
 * catalog validates it.
 */
function forwardedPath(url: string): string {
  let target = url;
  if (!url.startsWith('/')) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new Errors.badUrl();
    }
    target = `${parsed.pathname}${parsed.search}`;
  }
  const query = target.indexOf('?');
  const path = query === -1 ? target : target.slice(0, query);
  let decoded = path;
  // Most paths have nothing to decode; only an escaped one can hide a `..`.
  if (path.includes('%')) {
    try {
      decoded = decodeURIComponent(path);
    } catch {
      throw new Errors.badUrl();
    }
  }
  if (decoded.includes('/..') || decoded.includes('../')) throw new Errors.pathTraversal();
  return target;
}

/** The catalog's Vary joined to the gateway's own (x-api-key, and Origin from CORS). */
function joinVary(reply: FastifyReply, vary: string | string[] | undefined): void {
  if (vary !== undefined) reply.header('vary', `${String(reply.getHeader('vary'))}, ${vary}`);
}

/**
 * Forwards the catalog's routes, and anything else under `/v1`, to the catalog. The caller's
 * identity goes in headers only the gateway sets, next to the internal token; whatever a client
 * sent under those names, its API key and hop-by-hop headers are dropped. GET answers the catalog
 * shares between all keys of a tier are kept in the response cache, when it is on, and served
 * from it (`X-Cache: HIT`) while the catalog version they were computed at is the newest known.
 */
export const catalogProxyPlugin = fp<CatalogProxyOptions>(
  async function catalogProxy(
    app: FastifyInstance,
    { client, internalToken, metrics, cache, replaceTraceHeaders, guard },
  ) {
    const headersFor = upstreamHeaders(internalToken, replaceTraceHeaders);
    const failureLog = new LogThrottle<string>(FAILURE_LOG_WINDOW_MS);
    const hits = metrics.responseCache.labels('hit');
    const misses = metrics.responseCache.labels('miss');

    /** One catalog call, timed; a failure becomes the API's 502/503/504, logged at a bounded rate. */
    async function callCatalog(
      request: FastifyRequest,
      path: string,
      omit?: string,
    ): Promise<CatalogAnswer> {
      const caller = request.caller!;
      const call: CatalogCall = {
        method: request.method as CatalogCall['method'],
        path,
        headers: headersFor(
          request.headers,
          { tier: caller.tier, keyId: caller.keyId, requestId: request.id },
          omit,
        ),
      };
      propagateRequestTrace(request, call.headers);
      // A body is forwarded as the bytes that came; the catalog validates it.
      if (Buffer.isBuffer(request.body) && call.method !== 'GET' && call.method !== 'HEAD')
        call.body = request.body;
      const started = performance.now();
      const route = request.routeOptions.url ?? 'unmatched';
      let outcome = 'error';
      try {
        const response = await client.call(call);
        outcome = String(response.statusCode);
        return response;
      } catch (err) {
        if (!(err instanceof UpstreamFailure)) throw err;
        throw failed(request, err);
      } finally {
        const elapsedMs = performance.now() - started;
        metrics.upstreamDuration.labels(route, outcome).observe(elapsedMs / 1000);
        tagUpstreamCall(request, elapsedMs);
      }
    }

    /** Counts and logs a failed call; returns the client's answer. */
    function failed(request: FastifyRequest, failure: UpstreamFailure): Error {
      metrics.upstreamErrors.labels(failure.kind).inc();
      // While the catalog is down every request fails alike: one line per kind and window.
      const suppressed = failureLog.admit(failure.kind);
      if (suppressed !== undefined) {
        request.log.warn(
          { err: failure.cause, kind: failure.kind, suppressed },
          'catalog call failed',
        );
      }
      return failure.answer;
    }

    function relayHeaders(
      reply: FastifyReply,
      headers: CatalogAnswer['headers'],
      keepLength: boolean,
      xCache: string | undefined,
    ) {
      for (const [name, value] of relayedHeaders(headers, keepLength)) reply.header(name, value);
      joinVary(reply, headers.vary);
      if (xCache !== undefined) reply.header('x-cache', xCache);
    }

    /**
     * The catalog's answer to the client: sent in one write when it was read whole (its length
     * known and small, cheaper than piping a stream), else streamed as it comes (the export),
     * with the catalog's length when it gave one.
     */
    function relay(reply: FastifyReply, response: CatalogAnswer, xCache?: string) {
      relayHeaders(reply, response.headers, !Buffer.isBuffer(response.body), xCache);
      return reply.code(response.statusCode).send(response.body);
    }

    /** A 304 keeps the ETag and Vary of the answer, not its body headers (RFC 9110 15.4.5). */
    function notModified(reply: FastifyReply) {
      reply.removeHeader('content-type').removeHeader('content-encoding');
      return reply.code(304).send();
    }

    /** A kept answer, or a 304 when the client already holds its ETag (SPEC B9). */
    function answerFrom(
      request: FastifyRequest,
      reply: FastifyReply,
      answer: CachedAnswer,
      xCache: 'HIT' | 'MISS',
    ) {
      for (const [name, value] of answer.headers) reply.header(name, value);
      joinVary(reply, answer.vary);
      reply.header('x-cache', xCache);
      if (
        answer.etag !== undefined &&
        ifNoneMatchMatches(request.headers['if-none-match'], answer.etag)
      ) {
        return notModified(reply);
      }
      return reply.send(answer.body);
    }

    /**
     * A miss: the catalog is asked without If-None-Match, so its whole answer can be kept; the
     * 304 is decided here. An answer without a catalog version, or too big, is relayed only.
     */
    async function fetchAndKeep(
      request: FastifyRequest,
      reply: FastifyReply,
      path: string,
      key: string,
      share: (answer: CachedAnswer | undefined) => void,
    ) {
      const response = await callCatalog(request, path, 'if-none-match');
      const version = Number(response.headers[CATALOG_VERSION_HEADER]);
      const { body } = response;
      if (
        response.statusCode !== 200 ||
        !Number.isSafeInteger(version) ||
        !Buffer.isBuffer(body) ||
        body.length > cache!.maxEntryBytes
      ) {
        // Asked without If-None-Match, the catalog could not answer 304 itself.
        const etag = response.headers.etag;
        if (
          response.statusCode === 200 &&
          typeof etag === 'string' &&
          ifNoneMatchMatches(request.headers['if-none-match'], etag)
        ) {
          discard(response);
          relayHeaders(reply, response.headers, false, 'MISS');
          return notModified(reply);
        }
        return relay(reply, response, 'MISS');
      }
      const etag = response.headers.etag;
      const answer: CachedAnswer = {
        version,
        headers: relayedHeaders(response.headers, false),
        vary: response.headers.vary as string | undefined,
        etag: typeof etag === 'string' ? etag : undefined,
        // A copy: the bytes as read are a slice of one socket read, headers included, which a
        // kept slice would hold on to beyond what the cache counts.
        body: Buffer.from(body),
      };
      cache!.set(key, answer);
      share(answer);
      return answerFrom(request, reply, answer, 'MISS');
    }

    function forwarder(route: Pick<CatalogRoute, 'cacheable'>) {
      const cached = cache !== undefined && route.cacheable === true;
      return async function forward(request: FastifyRequest, reply: FastifyReply) {
        const path = forwardedPath(request.url);
        if (!cached) {
          const response = await callCatalog(request, path);
          return relay(reply, response, cache === undefined ? undefined : 'MISS');
        }
        const key = cacheKey(request.caller!.tier, path, request.headers['accept-encoding']);
        // Awaited only when a call is under way: an await of nothing still costs a microtask turn.
        let answer = cache.get(key);
        if (answer === undefined) {
          const pending = cache.pending(key);
          if (pending !== undefined) answer = await pending;
        }
        if (answer !== undefined) {
          hits.inc();
          return answerFrom(request, reply, answer, 'HIT');
        }
        misses.inc();
        if (request.method !== 'GET' || !cache.admit(key))
          return relay(reply, await callCatalog(request, path), 'MISS');
        return cache.fill(key, (share) => fetchAndKeep(request, reply, path, key, share));
      };
    }

    // The catalog's routes, from the one table: the key (and the tier the route needs) is
    // checked before any body is read, so no key is a 401 and a low tier a 403, never a 400.
    // Bodies are kept as bytes, never parsed here.
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
          onRequest: route.tier === 'free' ? guard : [guard, tierGuard(route.tier)],
          handler: forwarder(route),
        });
      }
    });

    // Any other read under /v1 reaches the catalog, for its own 404.
    app.route({
      method: ['GET', 'HEAD'],
      url: '/v1/*',
      schema: { hide: true },
      onRequest: guard,
      handler: forwarder({}),
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
