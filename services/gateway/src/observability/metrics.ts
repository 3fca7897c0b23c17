import { Counter, Gauge, type Registry } from 'prom-client';
import { LATENCY_BUCKETS, TalliedCounter, TalliedHistogram } from '../../../shared/metrics';

/** What `gateway_quota_counters_lost_total` says made the quota watch see lost counters. */
export type LostCountersEvidence =
  /** This gateway saw today's marker before, and it is gone: the counters went with it. */
  | 'marker_vanished'
  /** No marker for today when this gateway first looked, the day under way: counters lost, or no gateway ran today before it. */
  | 'marker_missing';

/** The gateway's own metrics (docs/observability.md). No label ever holds a key or an email. */
export function createGatewayMetrics(registry: Registry) {
  const registers = [registry];
  const metrics = {
    quotaDecisions: new TalliedCounter({
      name: 'gateway_quota_decisions_total',
      help: 'Quota decisions by tier and outcome (allowed or rejected)',
      labelNames: ['tier', 'outcome'] as const,
      registers,
    }),
    authFailures: new Counter({
      name: 'gateway_auth_failures_total',
      help: 'Requests refused for their API key, by reason (missing, malformed, unknown, revoked, replaced, expired, leaked, address_not_allowed, throttled, invalid_token)',
      labelNames: ['reason'] as const,
      registers,
    }),
    lastUseWrites: new Counter({
      name: 'gateway_key_last_use_writes_total',
      help: 'Keys whose last use this replica wrote to the key store (at most one a key and minute across replicas)',
      registers,
    }),
    searchAnalyticsDropped: new Counter({
      name: 'gateway_search_analytics_dropped_total',
      help: 'Searches left out of the analytics because a batch was full (a flood of distinct queries)',
      registers,
    }),
    upstreamDuration: new TalliedHistogram({
      name: 'gateway_upstream_duration_seconds',
      help: 'Time waiting for the catalog service, by route template and status code',
      labelNames: ['route', 'status_code'] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    upstreamErrors: new Counter({
      name: 'gateway_upstream_errors_total',
      help: 'Failed calls to the catalog by kind (unavailable, timeout, bad_gateway)',
      labelNames: ['kind'] as const,
      registers,
    }),
    internalTokenRefused: new Gauge({
      name: 'gateway_internal_token_refused',
      help: "1 while the catalog refuses this gateway's INTERNAL_TOKEN (the gateway is not ready then), else 0",
      registers,
    }),
    upstreamRetries: new Counter({
      name: 'gateway_upstream_retries_total',
      help: 'Catalog calls sent again because the connection closed or reset before any answer (by error code) or the catalog answered 503 while shutting down ("503")',
      labelNames: ['code'] as const,
      registers,
    }),
    redisErrors: new Counter({
      name: 'gateway_redis_errors_total',
      help: 'Redis errors by operation (connection, quota)',
      labelNames: ['operation'] as const,
      registers,
    }),
    insuranceActive: new Gauge({
      name: 'gateway_quota_insurance_active',
      help: '1 while quotas are kept per replica in memory because Redis does not answer',
      registers,
    }),
    insuranceDecisions: new Counter({
      name: 'gateway_quota_insurance_decisions_total',
      help: 'Quota decisions this replica took alone, on its own count, because Redis could not answer, by tier',
      labelNames: ['tier'] as const,
      registers,
    }),
    lostCounters: new Counter({
      name: 'gateway_quota_counters_lost_total',
      help: "Times this replica found that Redis lost the day's quota counters, by evidence (marker_vanished: certain; marker_missing: the day's marker absent when first looked for)",
      labelNames: ['evidence'] as const,
      registers,
    }),
    responseCache: new TalliedCounter({
      name: 'gateway_response_cache_requests_total',
      help: 'Requests of cacheable catalog routes by result (hit: answered from the gateway cache; miss: the catalog was asked)',
      labelNames: ['result'] as const,
      registers,
    }),
    responseCacheEvictions: new Counter({
      name: 'gateway_response_cache_evictions_total',
      help: 'Answers dropped from the gateway response cache to stay within RESPONSE_CACHE_MAX_BYTES',
      registers,
    }),
    mcpToolCalls: new Counter({
      name: 'gateway_mcp_tool_calls_total',
      help: 'MCP tools/call requests by tool (unknown: no tool of that name) and outcome (ok; error: a tool error; invalid: refused by the input schema or an unknown tool; over_quota)',
      labelNames: ['tool', 'outcome'] as const,
      registers,
    }),
    keyCacheLookups: new TalliedCounter({
      name: 'gateway_key_cache_lookups_total',
      help: 'API key cache lookups by result (hit or miss)',
      labelNames: ['result'] as const,
      registers,
    }),
  };
  // Both series exist from the start, so an alert on their increase sees the first loss.
  for (const evidence of ['marker_vanished', 'marker_missing'] satisfies LostCountersEvidence[]) {
    metrics.lostCounters.labels(evidence).inc(0);
  }
  return metrics;
}

export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;

/**
 * `gateway_response_cache_bytes`, read from the cache at each scrape. Registered only when there
 * is a cache, so the series is absent while RESPONSE_CACHE is off.
 */
export function registerResponseCacheSize(
  registry: Registry,
  cache: { readonly size: { readonly bytes: number } },
): void {
  new Gauge({
    name: 'gateway_response_cache_bytes',
    help: 'Bytes of answers held in the gateway response cache',
    registers: [registry],
    collect() {
      this.set(cache.size.bytes);
    },
  });
}
