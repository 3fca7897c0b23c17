import { check } from 'k6';
import type { Options } from 'k6/options';
import { Counter } from 'k6/metrics';
import { hasRateLimitHeaders, isJsonError } from './lib/contract';
import { get, header, registerFreeKey } from './lib/target';

/**
 * Quota exactness through the ingress, across every gateway replica behind it
 * (docs/api.md#quotas-and-rate-limit-headers): a fresh Free key hit by QUOTA + EXTRA requests from
 * many VUs at once must be admitted exactly QUOTA times; every other answer is a 429 with
 * Retry-After. The thresholds are exact counts, so one request too many or too few fails the run.
 *
 *   k6 run -e BASE_URL=https://api.example.com [-e QUOTA=100] [-e EXTRA=50] k6/quota.ts
 *
 * QUOTA must equal the gateway's QUOTA_FREE. FREE_KEY may name a Free key not used today;
 * otherwise the script registers one.
 */
const QUOTA = Number(__ENV.QUOTA ?? 100);
const EXTRA = Number(__ENV.EXTRA ?? 50);

const admitted = new Counter('quota_admitted');
const rejected = new Counter('quota_rejected');
const unexpected = new Counter('quota_unexpected');

export const options: Options = {
  scenarios: {
    burst: {
      executor: 'shared-iterations',
      vus: Math.min(50, QUOTA + EXTRA),
      iterations: QUOTA + EXTRA,
      maxDuration: '2m',
    },
  },
  thresholds: {
    quota_admitted: [`count==${QUOTA}`],
    quota_rejected: [`count==${EXTRA}`],
    quota_unexpected: ['count==0'],
    checks: ['rate==1'],
  },
};

export function setup(): { apiKey: string } {
  return { apiKey: __ENV.FREE_KEY ?? registerFreeKey('quota') };
}

export default function burst({ apiKey }: { apiKey: string }): void {
  const res = get('/v1/categories', apiKey, '/v1/categories');
  if (res.status === 200) admitted.add(1);
  else if (res.status === 429) rejected.add(1);
  else unexpected.add(1);
  check(res, { 'rate-limit headers on every answer': hasRateLimitHeaders });
  if (res.status === 429) {
    check(res, {
      '429 says when to retry': (r) => Number(header(r, 'retry-after')) > 0,
      '429 is JSON naming the tier': (r) => isJsonError(r) && String(r.body).includes('Free'),
    });
  }
}
