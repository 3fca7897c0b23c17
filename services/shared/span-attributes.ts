import type { Span } from '@opentelemetry/api';
import type { FastifyRequest } from 'fastify';
import type { Tier } from './tiers';

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
  // @fastify/otel decorates requests only while tracing is on.
  const span = (request as Partial<Pick<FastifyRequest, 'opentelemetry'>>).opentelemetry?.()?.span;
  if (!span) return;
  span.setAttribute('tool_directory.tier', tier);
  if (quotaMs !== undefined) span.setAttribute('tool_directory.quota_ms', quotaMs);
}
