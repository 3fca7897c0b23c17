import http, { type RefinedResponse, type ResponseType } from 'k6/http';

/**
 * Where the scripts point and with which key, from k6's `-e NAME=value` (or the environment):
 * BASE_URL is the gateway as clients see it (the ingress in a cluster), API_KEY a key whose
 * daily quota covers the run.
 */
export const BASE_URL = (__ENV.BASE_URL ?? 'http://localhost:8080').replace(/\/$/, '');

export function requiredEnv(name: string): string {
  const value = __ENV[name];
  if (!value) throw new Error(`Set ${name}: k6 run -e ${name}=… (see docs/load-testing.md)`);
  return value;
}

/**
 * GET through the gateway with a key, tagged with the route *template* (`name`), so that k6's
 * metrics and thresholds stay per endpoint however many slugs and queries a run uses.
 */
export function get(path: string, apiKey: string, route: string) {
  return http.get(`${BASE_URL}${path}`, {
    headers: { 'x-api-key': apiKey },
    tags: { name: route },
  });
}

/** A header by name in any case: k6 gives headers in Go's canonical form (`X-Ratelimit-Limit`). */
export function header(res: RefinedResponse<ResponseType>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const key of Object.keys(res.headers))
    if (key.toLowerCase() === wanted) return res.headers[key];
  return undefined;
}

/**
 * Registers a fresh Free key (docs/api.md#api-keys-and-registration); the gateway allows a few per
 * client address an hour.
 */
export function registerFreeKey(label: string): string {
  const res = http.post(
    `${BASE_URL}/v1/register`,
    JSON.stringify({
      email: `k6-${label}-${Date.now()}-${Math.floor(Math.random() * 1e9)}@example.com`,
      name: `k6 ${label}`,
      useCase: 'load test',
    }),
    { headers: { 'content-type': 'application/json' }, tags: { name: '/v1/register' } },
  );
  if (res.status !== 201) throw new Error(`register answered ${res.status}: ${String(res.body)}`);
  return (res.json() as { apiKey: string }).apiKey;
}
