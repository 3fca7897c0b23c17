import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { CATALOG_VERSION_HEADER } from '../../../shared/contract';
import { Errors } from '../../../shared/errors';
import { LogThrottle } from '../../../shared/log-throttle';
import { propagateRequestTrace, tagUpstreamCall } from '../../../shared/span-attributes';
import type { GatewayMetrics } from '../observability/metrics';
import { type CachedAnswer, type ResponseCache, cacheKey } from './cache/response-cache';
import type { CatalogAnswer } from './catalog-answer';
import { type CatalogCall, type CatalogClient, UpstreamFailure } from './catalog-client';
import { relayedHeaders, upstreamHeaders } from './header-rules';

/** How often each kind of upstream failure is logged; the metric counts every one. */
const FAILURE_LOG_WINDOW_MS = 10_000;

/** What every call to the catalog on a client's behalf goes through, built once per gateway. */
export interface Upstream {
  client: CatalogClient;
  headersFor: ReturnType<typeof upstreamHeaders>;
  metrics: GatewayMetrics;
  /** The response cache; undefined when turned off (RESPONSE_CACHE=off). */
  cache: ResponseCache | undefined;
  failures: LogThrottle<string>;
  hits: { inc(): void };
  misses: { inc(): void };
}

export interface UpstreamOptions {
  client: CatalogClient;
  internalToken: string;
  metrics: GatewayMetrics;
  cache: ResponseCache | undefined;
  /**
   * Drop the client's traceparent/tracestate, because the tracer injects its own (one
   * traceparent, never two). Without tracing they pass through, so the trace is not cut.
   */
  replaceTraceHeaders: boolean;
}

export function createUpstream({
  client,
  internalToken,
  metrics,
  cache,
  replaceTraceHeaders,
}: UpstreamOptions): Upstream {
  return {
    client,
    headersFor: upstreamHeaders(internalToken, replaceTraceHeaders),
    metrics,
    cache,
    failures: new LogThrottle<string>(FAILURE_LOG_WINDOW_MS),
    hits: metrics.responseCache.labels('hit'),
    misses: metrics.responseCache.labels('miss'),
  };
}

/** One call to the catalog on behalf of the caller of `request`. */
export interface CatalogRequest {
  method: CatalogCall['method'];
  /** Path and query, as the catalog gets them. */
  path: string;
  /** The route template the call is counted under: the REST route, or the one a tool mirrors. */
  route: string;
  /** The client's headers passed on (less what header-rules.ts keeps back); none for the gateway's own. */
  clientHeaders: IncomingHttpHeaders;
  /** A client header left out (the cache asks without If-None-Match). */
  omit?: string;
  /** A request body, forwarded as the bytes that came; the catalog validates it. */
  body?: Buffer;
  /** Its answers are shared by every key of a tier (the route table's `cacheable`). */
  cacheable?: boolean;
}

/**
 * What a read of the catalog came to: an answer kept in the response cache (or just kept), or the
 * catalog's answer as it came (a route not cached, a key asked once, an answer too big to keep).
 * `xCache` is the `X-Cache` the client gets; none while the cache is off.
 */
export type CatalogRead =
  | { kept: CachedAnswer; relayed?: undefined; xCache: 'HIT' | 'MISS' }
  | { kept?: undefined; relayed: CatalogAnswer; xCache: 'MISS' | undefined };

/**
 * Reads the catalog through the gateway's response cache. A cacheable GET is answered from the
 * cache while the catalog version it was computed at is the newest known (`X-Cache: HIT`);
 * concurrent misses of one kept key share one catalog call; an answer is kept from its key's
 * second request on. Anything else is one catalog call. The caller answers with the result
 * (send-answer.ts), or reads its body (an MCP tool).
 */
export async function readCatalog(
  upstream: Upstream,
  request: FastifyRequest,
  call: CatalogRequest,
): Promise<CatalogRead> {
  const { cache } = upstream;
  if (cache === undefined || call.cacheable !== true) {
    return { relayed: await callCatalog(upstream, request, call), xCache: cache && 'MISS' };
  }
  const key = cacheKey(request.caller!.tier, call.path, call.clientHeaders['accept-encoding']);
  // Awaited only when a call is under way: an await of nothing still costs a microtask turn.
  let answer = cache.get(key);
  if (answer === undefined) {
    const pending = cache.pending(key);
    if (pending !== undefined) answer = await pending;
  }
  if (answer !== undefined) {
    upstream.hits.inc();
    return { kept: answer, xCache: 'HIT' };
  }
  upstream.misses.inc();
  if (call.method !== 'GET' || !cache.admit(key)) {
    return { relayed: await callCatalog(upstream, request, call), xCache: 'MISS' };
  }
  return cache.fill(key, (share) => fetchAndKeep(upstream, request, call, key, share));
}

/**
 * A miss: the catalog is asked without If-None-Match, so its whole answer can be kept (the 304 is
 * decided when answering). An answer without a catalog version, or too big, is relayed only.
 */
async function fetchAndKeep(
  upstream: Upstream,
  request: FastifyRequest,
  call: CatalogRequest,
  key: string,
  share: (answer: CachedAnswer | undefined) => void,
): Promise<CatalogRead> {
  const cache = upstream.cache!;
  const response = await callCatalog(upstream, request, { ...call, omit: 'if-none-match' });
  const version = Number(response.headers[CATALOG_VERSION_HEADER]);
  const { body } = response;
  if (
    response.statusCode !== 200 ||
    !Number.isSafeInteger(version) ||
    !Buffer.isBuffer(body) ||
    body.length > cache.maxEntryBytes
  ) {
    return { relayed: response, xCache: 'MISS' };
  }
  const etag = response.headers.etag;
  const answer: CachedAnswer = {
    version,
    headers: relayedHeaders(response.headers, false),
    vary: response.headers.vary as string | undefined,
    etag: typeof etag === 'string' ? etag : undefined,
    // A copy: the bytes as read are a slice of one socket read, headers included, which a kept
    // slice would hold on to beyond what the cache counts.
    body: Buffer.from(body),
  };
  cache.set(key, answer);
  share(answer);
  return { kept: answer, xCache: 'MISS' };
}

/**
 * One catalog call for the caller of `request` (its key's tier and id, its request id and trace),
 * timed; a failure becomes the API's 502/503/504, logged at a bounded rate. Every read that the
 * cache does not answer ends here, a REST route's or an MCP tool's; it sits beside readCatalog so
 * that a read, from the cache lookup to the call, is one file to follow.
 */
export async function callCatalog(
  upstream: Upstream,
  request: FastifyRequest,
  { method, path, route, clientHeaders, omit, body }: CatalogRequest,
): Promise<CatalogAnswer> {
  const caller = request.caller!;
  const call: CatalogCall = {
    method,
    path,
    headers: upstream.headersFor(
      clientHeaders,
      { tier: caller.tier, keyId: caller.keyId, requestId: request.id },
      omit,
    ),
  };
  propagateRequestTrace(request, call.headers);
  if (body !== undefined && method !== 'GET' && method !== 'HEAD') call.body = body;
  const started = performance.now();
  let outcome = 'error';
  try {
    const response = await upstream.client.call(call);
    outcome = String(response.statusCode);
    return response;
  } catch (err) {
    if (!(err instanceof UpstreamFailure)) throw err;
    throw failed(upstream, request, err);
  } finally {
    const elapsedMs = performance.now() - started;
    upstream.metrics.upstreamDuration.labels(route, outcome).observe(elapsedMs / 1000);
    tagUpstreamCall(request, elapsedMs);
  }
}

/** Counts and logs a failed call; returns the client's answer. */
function failed(upstream: Upstream, request: FastifyRequest, failure: UpstreamFailure): Error {
  upstream.metrics.upstreamErrors.labels(failure.kind).inc();
  // While the catalog is down every request fails alike: one line per kind and window.
  const suppressed = upstream.failures.admit(failure.kind);
  if (suppressed !== undefined) {
    request.log.warn({ err: failure.cause, kind: failure.kind, suppressed }, 'catalog call failed');
  }
  return failure.answer;
}

/**
 * The path and query sent to the catalog: the request's own, also when the request line was in
 * absolute form (`GET http://host/v1/…`). A path that cannot be decoded, or that decodes to `..`
 * segments (path traversal), is refused with the API's 400; the query goes as sent, and the
 * catalog validates it.
 */
export function forwardedPath(url: string): string {
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
