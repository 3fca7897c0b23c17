import type { Context, Span } from '@opentelemetry/api';
import type { FastifyRequest } from 'fastify';
import type { Tier } from './tiers';

/** @fastify/otel's view of a request; it decorates requests only while tracing is on. */
function tracingOf(request: FastifyRequest) {
  return (request as Partial<Pick<FastifyRequest, 'opentelemetry'>>).opentelemetry?.();
}

/**
 * The context of the request's SERVER span, for a span made after an `await` (the gateway keeps
 * no async context); undefined when the request is not traced.
 */
export function requestTraceContext(request: FastifyRequest): Context | undefined {
  return tracingOf(request)?.context ?? undefined;
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
  const route = request.routeOptions.url;
  span.updateName(route === undefined ? request.method : `${request.method} ${route}`);
  span.setAttribute('tool_directory.request_id', request.id);
}

/**
 * Puts the caller's tier on the request's SERVER span, so traces can be filtered by tier, and at
 * the gateway how long its quota call to Redis took. The key itself never goes on a span.
 */
export function tagRequestSpan(request: FastifyRequest, tier: Tier, quotaMs?: number): void {
  const span = requestSpan(request);
  if (!span) return;
  span.setAttribute('tool_directory.tier', tier);
  if (quotaMs !== undefined) span.setAttribute('tool_directory.quota_ms', quotaMs);
}
