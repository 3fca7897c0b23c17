import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import '../../../shared/contract';
import { Errors } from '../../../shared/errors';
import { LogThrottle } from '../../../shared/log-throttle';
import { propagateRequestTrace, tagUpstreamCall } from '../../../shared/span-attributes';
import type { ResponseCache } from './cache/response-cache';
import type { GatewayMetrics } from '../observability/metrics';
import type { CatalogAnswer } from './catalog-answer';
import { type CatalogCall, type CatalogClient, UpstreamFailure } from './catalog-client';
import { upstreamHeaders } from './header-rules';

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
 * One catalog call for the caller of `request` (its key's tier and id, its request id and trace),
 * timed; a failure becomes the API's 502/503/504, logged at a bounded rate. Any route calls it:
 * a REST route for itself, the MCP endpoint for the REST route a tool mirrors.
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
