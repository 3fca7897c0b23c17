import type { FastifyReply } from 'fastify';
import type { QuotaDecision } from './quota-limiter';

/** Every header of docs/api.md#quotas-and-rate-limit-headers, exposed to browsers by CORS. */
export const RATE_LIMIT_HEADERS = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit-Policy',
  'RateLimit',
  'Retry-After',
] as const;

/** `RateLimit-Policy` of the IETF draft for a daily quota; computed once per tier. */
export function ratePolicy(quota: number): string {
  return `"daily";q=${quota};w=86400`;
}

export function setRateLimitHeaders(
  reply: FastifyReply,
  decision: QuotaDecision,
  policy: string,
): void {
  reply
    .header('x-ratelimit-limit', decision.limit)
    .header('x-ratelimit-remaining', decision.remaining)
    .header('x-ratelimit-reset', decision.resetAt)
    .header('ratelimit-policy', policy)
    .header('ratelimit', `"daily";r=${decision.remaining};t=${decision.secondsToReset}`);
}
