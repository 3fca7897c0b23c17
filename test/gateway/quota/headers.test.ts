import { RedisServer } from '../../support/redis-server';
import { inProcessGateway } from '../../support/gateway';
import { ServiceProcess, registerKey } from '../../support/services';
import { RATE_HEADERS } from '../../support/rate-limit-headers';

/** The gateway's clock stands still at noon UTC, so a run that crosses midnight changes nothing. */
const NOW = Date.parse('2026-03-14T12:00:00.000Z');
const NEXT_MIDNIGHT = Date.parse('2026-03-15T00:00:00.000Z') / 1000;
const TO_MIDNIGHT = 12 * 3_600;

/**
 * docs/api.md#quotas-and-rate-limit-headers: every response to a keyed request carries the
 * rate-limit headers, whatever its status. Over HTTP, with real Redis and catalog; the gateway runs
 * in this process for its clock.
 */
describe('rate-limit headers, over HTTP with Redis and an injected clock', () => {
  let redis: RedisServer;
  let catalog: ServiceProcess;
  let gateway: Awaited<ReturnType<typeof inProcessGateway>>;
  let url: string;
  let key: string;

  beforeAll(async () => {
    redis = await RedisServer.start();
    catalog = await ServiceProcess.start('catalog', {});
    gateway = await inProcessGateway(
      { CATALOG_URL: catalog.url, REDIS_URL: redis.url, QUOTA_FREE: '4' },
      () => NOW,
    );
    url = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
    key = await registerKey(url);
  });

  afterAll(async () => {
    await gateway.close();
    await catalog.stop();
    await redis.stop();
  });

  const get = (path: string) => fetch(`${url}${path}`, { headers: { 'x-api-key': key } });

  function expectRateHeaders(response: Response, remaining: number) {
    for (const name of RATE_HEADERS) expect(response.headers.get(name)).not.toBeNull();
    expect(response.headers.get('x-ratelimit-reset')).toBe(String(NEXT_MIDNIGHT));
    expect(response.headers.get('x-ratelimit-limit')).toBe('4');
    expect(response.headers.get('x-ratelimit-remaining')).toBe(String(remaining));
    expect(response.headers.get('ratelimit-policy')).toBe('"daily";q=4;w=86400');
    expect(response.headers.get('ratelimit')).toBe(`"daily";r=${remaining};t=${TO_MIDNIGHT}`);
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
    expect(limited.headers.get('retry-after')).toBe(String(TO_MIDNIGHT));
    const body = (await limited.json()) as { error: string };
    expect(Object.keys(body)).toEqual(['error']);
    expect(body.error).toContain('Free');
    expect(body.error).toContain('4');
    expect(body.error).toContain('2026-03-15T00:00:00.000Z');
  });

  test('CORS exposes every documented response header to browsers', async () => {
    const response = await fetch(`${url}/v1/categories`, {
      headers: { 'x-api-key': key, origin: 'https://app.example' },
    });
    const exposed = response.headers.get('access-control-expose-headers')!.toLowerCase();
    for (const name of [
      ...RATE_HEADERS,
      'retry-after',
      'x-request-id',
      'etag',
      'x-cache',
      'www-authenticate',
      'content-disposition',
    ])
      expect(exposed).toContain(name);
  });

  test('requests without a valid key carry no quota headers and spend nothing', async () => {
    const response = await fetch(`${url}/v1/tools`);
    expect(response.status).toBe(401);
    expect(response.headers.get('x-ratelimit-remaining')).toBeNull();
  });

  test('the key is checked before the body is read: a bad body without a key is 401', async () => {
    const response = await fetch(`${url}/v1/anything`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"not json',
    });
    expect(response.status).toBe(401);
    expect((await response.json()) as object).toHaveProperty('error');
  });
});
