import type { IncomingHttpHeaders } from 'node:http';
import { ROOT_CONTEXT, type Span, SpanKind, type Tracer, propagation } from '@opentelemetry/api';
import type { FastifyRequest } from 'fastify';
import type { Tier } from './tiers';

/** @fastify/otel's view of a request; it decorates requests only while tracing is on. */
function tracingOf(request: FastifyRequest) {
  return (request as Partial<Pick<FastifyRequest, 'opentelemetry'>>).opentelemetry?.();
}

/**
 * Puts the request's trace context on the headers of a call it makes (W3C `traceparent`, and
 * `tracestate` when there is one), so the callee's SERVER span is a child of the request's.
 * Nothing is added when the request is not traced.
 */
export function propagateRequestTrace(
  request: FastifyRequest,
  headers: Record<string, string | string[]>,
): void {
  const context = tracingOf(request)?.context;
  if (context) propagation.inject(context, headers);
}

/** The request's SERVER span, when it is traced. */
export function requestSpan(request: FastifyRequest): Span | undefined {
  return tracingOf(request)?.span ?? undefined;
}

/**
 * Names a request's SERVER span (@fastify/otel's request span) as the HTTP conventions do,
 * `GET /v1/tools/:slug`, and puts the request id on it, so a log line or a client's
 * X-Request-Id leads to its trace. The route and the status are set by @fastify/otel.
 */
export function describeServerSpan(span: Span, request: FastifyRequest): void {
  span.updateName(spanName(request.method, request.routeOptions.url));
  span.setAttribute('tool_directory.request_id', request.id);
}

/** Span names by route, then method: a route's methods are few, and unmatched paths not kept. */
const spanNames = new Map<string, Map<string, string>>();

/**
 * `METHOD route`, built once per route and method. Built per request by `+` or a template it
 * would be a V8 cons string, and the OTLP serializer, optimized on spans named by cons strings,
 * takes twice as long per span as on flat ones (docs/performance.md#current-figures); `join`
 * makes it flat.
 */
function spanName(method: string, route: string | undefined): string {
  if (route === undefined) return method;
  let byMethod = spanNames.get(route);
  if (byMethod === undefined) spanNames.set(route, (byMethod = new Map()));
  let name = byMethod.get(method);
  if (name === undefined) byMethod.set(method, (name = [method, route].join(' ')));
  return name;
}

/**
 * Puts the caller's tier on the request's SERVER span, so traces can be filtered by tier, and at
 * the gateway how long its quota call to Redis took. The key itself never goes on a span.
 */
export function tagRequestSpan(request: FastifyRequest, tier: Tier, quotaMs?: number): void {
  const span = requestSpan(request);
  if (span) tagCaller(span, tier, quotaMs);
}

/** The caller's tier, and the quota call's time, on a SERVER span: tagRequestSpan's one rule. */
export function tagCaller(span: Span, tier: Tier, quotaMs?: number): void {
  span.setAttribute('tool_directory.tier', tier);
  if (quotaMs !== undefined) span.setAttribute('tool_directory.quota_ms', quotaMs);
}

/**
 * The SERVER span of a request the gateway answers before Fastify (its cached-answer path), as
 * @fastify/otel starts Fastify's and describeServerSpan names it: the client's trace continued,
 * `METHOD route`, the HTTP conventions' method, path and route, and the request id.
 */
export function startServerSpan(
  tracer: Tracer,
  headers: IncomingHttpHeaders,
  request: { method: string; path: string; route: string; id: string },
): Span {
  return tracer.startSpan(
    spanName(request.method, request.route),
    {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': request.method,
        'url.path': request.path,
        'http.route': request.route,
        'tool_directory.request_id': request.id,
      },
    },
    propagation.extract(ROOT_CONTEXT, headers),
  );
}

/** Ends a span of startServerSpan with the answer's status, as @fastify/otel ends its own. */
export function endServerSpan(span: Span, status: number): void {
  span.setAttribute('http.response.status_code', status);
  span.end();
}

/**
 * Times the gateway's call to the catalog on its SERVER span (`tool_directory.upstream_ms`),
 * as a proxy's one span per request does (Envoy's, nginx's): the catalog's own SERVER span is
 * the child of that span, and the attribute still tells the wait when the catalog never answered.
 */
export function tagUpstreamCall(request: FastifyRequest, upstreamMs: number): void {
  requestSpan(request)?.setAttribute('tool_directory.upstream_ms', upstreamMs);
}

/**
 * Puts the MCP method a request carried on its SERVER span, and for a `tools/call` the tool's
 * name, under the names of the OpenTelemetry conventions for MCP: one span per MCP request, which
 * the tool call's catalog span is the child of.
 */
export function tagMcpRequest(request: FastifyRequest, method: string, tool?: string): void {
  const span = requestSpan(request);
  if (!span) return;
  span.setAttribute('mcp.method.name', method);
  if (tool !== undefined) span.setAttribute('gen_ai.tool.name', tool);
}
