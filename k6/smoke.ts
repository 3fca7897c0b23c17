import { check, group } from 'k6';
import http from 'k6/http';
import type { Options } from 'k6/options';
import { hasRateLimitHeaders, isEnvelope, isJsonError } from './lib/contract';
import { BASE_URL, get, header, registerFreeKey } from './lib/target';

/**
 * After a deploy: one pass over every public endpoint through the ingress, asserting docs/api.md's
 * statuses, headers and bodies. Any failed check fails the run (exit code 99).
 *
 *   k6 run -e BASE_URL=https://api.example.com k6/smoke.ts
 *   k6 run -e BASE_URL=… -e API_KEY=tdk_… -e API_KEY_TIER=enterprise k6/smoke.ts
 *
 * Without API_KEY it registers a fresh Free key (one of the few registrations an address may
 * make per hour).
 */
export const options: Options = {
  vus: 1,
  iterations: 1,
  thresholds: { checks: ['rate==1'] },
};

interface Setup {
  apiKey: string;
  tier: string;
}

export function setup(): Setup {
  if (__ENV.API_KEY) return { apiKey: __ENV.API_KEY, tier: __ENV.API_KEY_TIER ?? 'free' };
  return { apiKey: registerFreeKey('smoke'), tier: 'free' };
}

export default function smoke({ apiKey, tier }: Setup): void {
  const paid = tier !== 'free';

  group('operations', () => {
    check(http.get(`${BASE_URL}/healthz`), { 'healthz is 200': (r) => r.status === 200 });
    const preflight = http.options(`${BASE_URL}/v1/tools`, null, {
      headers: {
        Origin: 'https://app.example.com',
        'Access-Control-Request-Method': 'GET',
        'Access-Control-Request-Headers': 'x-api-key',
      },
    });
    check(preflight, {
      'a preflight needs no key': (r) => r.status === 204,
      'a preflight allows the origin': (r) =>
        header(r, 'access-control-allow-origin') !== undefined,
    });
  });

  group('authentication', () => {
    const missing = http.get(`${BASE_URL}/v1/tools`, { tags: { name: '/v1/tools' } });
    check(missing, {
      'no key is 401': (r) => r.status === 401,
      'the 401 names the header': (r) => isJsonError(r) && String(r.body).includes('x-api-key'),
    });
    check(get('/v1/tools', 'tdk_not-a-real-key', '/v1/tools'), {
      'a bad key is 401 JSON': (r) => r.status === 401 && isJsonError(r),
    });
  });

  group('catalog', () => {
    const list = get('/v1/tools?limit=5', apiKey, '/v1/tools');
    check(list, {
      'list is 200': (r) => r.status === 200,
      'list is an envelope': isEnvelope,
      'list carries the rate-limit headers': hasRateLimitHeaders,
    });
    const first = (list.json() as { data: { slug: string }[] }).data[0]!.slug;
    const second = (list.json() as { data: { slug: string }[] }).data[1]!.slug;

    const detail = get(`/v1/tools/${first}`, apiKey, '/v1/tools/{slug}');
    check(detail, {
      'detail is 200': (r) => r.status === 200,
      'paid fields only for paid tiers': (r) =>
        ((r.json() as { data: Record<string, unknown> }).data.longDescription !== undefined) ===
        paid,
    });
    check(get('/v1/tools/no-such-tool', apiKey, '/v1/tools/{slug}'), {
      'an unknown slug is 404 JSON': (r) => r.status === 404 && isJsonError(r),
      'a 404 carries the rate-limit headers': hasRateLimitHeaders,
    });
    check(get('/v1/categories', apiKey, '/v1/categories'), {
      'categories is 200': (r) => r.status === 200 && isEnvelope(r),
    });
    check(get('/v1/search?q=lang', apiKey, '/v1/search'), {
      'search is 200 with a total': (r) =>
        r.status === 200 &&
        typeof (r.json() as { meta: { total: unknown } }).meta.total === 'number',
    });
    check(get('/v1/tools?limit=1000', apiKey, '/v1/tools'), {
      'a bad parameter is 400 naming it': (r) =>
        r.status === 400 && isJsonError(r) && String(r.body).includes('limit'),
    });
    check(get(`/v1/compare/${first}/${second}`, apiKey, '/v1/compare/{tool1}/{tool2}'), {
      'compare is 200 for paid tiers, 403 for Free': (r) => r.status === (paid ? 200 : 403),
    });
    check(get('/v1/export?format=ndjson', apiKey, '/v1/export'), {
      'export is 200 for Enterprise, 403 otherwise': (r) =>
        r.status === (tier === 'enterprise' ? 200 : 403),
    });
  });
}
