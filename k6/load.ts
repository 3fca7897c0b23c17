import { check } from 'k6';
import type { Options } from 'k6/options';
import { hasRateLimitHeaders } from './lib/contract';
import { get, requiredEnv } from './lib/target';

/**
 * Sustained read traffic as clients make it: an open model (requests arrive at RATE per second
 * whatever the latency), ramped up, held, and ramped down, over a mix of the catalog's reads.
 * Thresholds make the run fail when the service misses its objectives.
 *
 *   k6 run -e BASE_URL=https://api.example.com -e API_KEY=tdk_… [-e RATE=200] [-e HOLD=10m] k6/load.ts
 *
 * API_KEY must be a key whose daily quota covers the run (RATE × seconds): create one with
 * `npm run keys -- create --tier enterprise --email … --name "load test"`.
 */
const RATE = Number(__ENV.RATE ?? 50);
const HOLD = __ENV.HOLD ?? '5m';

export const options: Options = {
  scenarios: {
    reads: {
      executor: 'ramping-arrival-rate',
      startRate: 1,
      timeUnit: '1s',
      preAllocatedVUs: Math.max(10, RATE),
      maxVUs: Math.max(50, RATE * 4),
      stages: [
        { target: RATE, duration: '1m' },
        { target: RATE, duration: HOLD },
        { target: 0, duration: '30s' },
      ],
    },
  },
  thresholds: {
    http_req_failed: ['rate<0.01'],
    checks: ['rate>0.99'],
    'http_req_duration{name:/v1/tools}': ['p(95)<300', 'p(99)<800'],
    'http_req_duration{name:/v1/tools/{slug}}': ['p(95)<200', 'p(99)<500'],
    'http_req_duration{name:/v1/search}': ['p(95)<400', 'p(99)<1000'],
    'http_req_duration{name:/v1/categories}': ['p(95)<200', 'p(99)<500'],
  },
};

interface Setup {
  apiKey: string;
  slugs: string[];
  categories: string[];
}

const QUERIES = ['vector database', 'agent', 'lang', 'image generation', 'observability', 'rag'];

export function setup(): Setup {
  const apiKey = requiredEnv('API_KEY');
  const tools = get('/v1/tools?limit=100', apiKey, '/v1/tools').json() as {
    data: { slug: string }[];
  };
  const categories = get('/v1/categories', apiKey, '/v1/categories').json() as {
    data: { slug: string }[];
  };
  return {
    apiKey,
    slugs: tools.data.map((t) => t.slug),
    categories: categories.data.map((c) => c.slug),
  };
}

const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)]!;

/** 40 % lists, 30 % searches, 20 % details, 10 % categories. */
export default function reads({ apiKey, slugs, categories }: Setup): void {
  const roll = Math.random();
  const res =
    roll < 0.4
      ? get(`/v1/tools?category=${pick(categories)}&page=1&limit=20`, apiKey, '/v1/tools')
      : roll < 0.7
        ? get(`/v1/search?q=${encodeURIComponent(pick(QUERIES))}`, apiKey, '/v1/search')
        : roll < 0.9
          ? get(`/v1/tools/${pick(slugs)}`, apiKey, '/v1/tools/{slug}')
          : get('/v1/categories', apiKey, '/v1/categories');
  check(res, {
    'status is 200': (r) => r.status === 200,
    'rate-limit headers': hasRateLimitHeaders,
  });
}
