/**
 * The rate-limit headers of every keyed answer (docs/api.md#quotas-and-rate-limit-headers), as a
 * client reads them.
 */
export const RATE_HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit-policy',
  'ratelimit',
] as const;
