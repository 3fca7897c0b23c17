import { RedisServer } from '../support/redis-server';
import { registerKey, startStack } from '../support/services';

type Stack = Awaited<ReturnType<typeof startStack>>;

const RATE_HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit-policy',
  'ratelimit',
];

/** SPEC B4: every response to a keyed request carries the rate-limit headers, whatever its status. */
describe('rate-limit headers, real processes and Redis', () => {
  let redis: RedisServer;
  let stack: Stack;
  let key: string;

  beforeAll(async () => {
    redis = await RedisServer.start();
    stack = await startStack({ REDIS_URL: redis.url, QUOTA_FREE: '4' });
    key = await registerKey(stack.gateway.url);
  });

  afterAll(async () => {
    await stack.stop();
    await redis.stop();
  });

  const get = (path: string) =>
    fetch(`${stack.gateway.url}${path}`, { headers: { 'x-api-key': key } });

  function expectRateHeaders(response: Response, remaining: number) {
    for (const name of RATE_HEADERS) expect(response.headers.get(name)).not.toBeNull();
    const nextMidnight = Math.ceil(Date.now() / 86_400_000) * 86_400;
    const reset = Number(response.headers.get('x-ratelimit-reset'));
    expect(reset).toBe(nextMidnight);
    const toReset = reset - Math.floor(Date.now() / 1000);
    expect(response.headers.get('x-ratelimit-limit')).toBe('4');
    expect(response.headers.get('x-ratelimit-remaining')).toBe(String(remaining));
    expect(response.headers.get('ratelimit-policy')).toBe('"daily";q=4;w=86400');
    const t = Number(response.headers.get('ratelimit')!.match(/^"daily";r=(\d+);t=(\d+)$/)![2]);
    expect(response.headers.get('ratelimit')).toMatch(
      new RegExp(`^"daily";r=${remaining};t=\\d+$`),
    );
    expect(Math.abs(t - toReset)).toBeLessThanOrEqual(2);
  }

  test('on 200, 400, 404 and 429, counting down, never negative', async () => {
    const ok = await get('/v1/tools?limit=1');
    expect(ok.status).toBe(200);
    expectRateHeaders(ok, 3);

    const bad = await get('/v1/tools?limit=1000');
    expect(bad.status).toBe(400);
    expectRateHeaders(bad, 2);

    const missing = await get('/v1/tools/no-such-tool');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: "Tool 'no-such-tool' not found" });
    expectRateHeaders(missing, 1);

    const unknownRoute = await get('/v1/nothing-here');
    expect(unknownRoute.status).toBe(404);
    expectRateHeaders(unknownRoute, 0);

    const limited = await get('/v1/tools');
    expect(limited.status).toBe(429);
    expectRateHeaders(limited, 0);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    const body = (await limited.json()) as { error: string };
    expect(Object.keys(body)).toEqual(['error']);
    const resetIso = new Date(
      Number(limited.headers.get('x-ratelimit-reset')) * 1000,
    ).toISOString();
    expect(body.error).toContain('Free');
    expect(body.error).toContain('4');
    expect(body.error).toContain(resetIso);
  });

  test('CORS exposes the rate-limit headers, X-Request-Id and ETag to browsers', async () => {
    const response = await fetch(`${stack.gateway.url}/v1/categories`, {
      headers: { 'x-api-key': key, origin: 'https://app.example' },
    });
    const exposed = response.headers.get('access-control-expose-headers')!.toLowerCase();
    for (const name of [...RATE_HEADERS, 'retry-after', 'x-request-id', 'etag'])
      expect(exposed).toContain(name);
  });

  test('requests without a valid key carry no quota headers and spend nothing', async () => {
    const response = await fetch(`${stack.gateway.url}/v1/tools`);
    expect(response.status).toBe(401);
    expect(response.headers.get('x-ratelimit-remaining')).toBeNull();
  });

  test('the key is checked before the body is read: a bad body without a key is 401', async () => {
    const response = await fetch(`${stack.gateway.url}/v1/anything`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"not json',
    });
    expect(response.status).toBe(401);
    expect((await response.json()) as object).toHaveProperty('error');
  });
});
