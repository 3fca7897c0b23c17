import type { FastifyRequest } from 'fastify';
import type { Tier } from './tiers';

interface OtelRequestContext {
  instrumented?: boolean;
  span?: { setAttribute(key: string, value: string): unknown };
}

/**
 * Puts the caller's tier on the request's span (@fastify/otel), so traces can be filtered by
 * tier. The key itself never goes on a span: only the tier and the route.
 */
export function tagRequestSpan(request: FastifyRequest, tier: Tier): void {
  const otel = (
    request as FastifyRequest & { opentelemetry?: () => OtelRequestContext }
  ).opentelemetry?.();
  if (otel?.instrumented) otel.span?.setAttribute('tool_directory.tier', tier);
}
