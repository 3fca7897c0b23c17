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

/**
 * The rate-limit headers of a decision, as name, value, name, value: one rule for a Fastify reply
 * and for the cached-answer path, which writes its head itself (cached-answer-path.ts).
 */
export function rateLimitHeaderPairs(decision: QuotaDecision, policy: string): string[] {
  return [
    'x-ratelimit-limit',
    String(decision.limit),
    'x-ratelimit-remaining',
    String(decision.remaining),
    'x-ratelimit-reset',
    String(decision.resetAt),
    'ratelimit-policy',
    policy,
    'ratelimit',
    `"daily";r=${decision.remaining};t=${decision.secondsToReset}`,
  ];
}

export function setRateLimitHeaders(
  reply: FastifyReply,
  decision: QuotaDecision,
  policy: string,
): void {
  const pairs = rateLimitHeaderPairs(decision, policy);
  for (let i = 0; i < pairs.length; i += 2) reply.header(pairs[i]!, pairs[i + 1]);
}
