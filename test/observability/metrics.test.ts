import { RedisServer } from '../support/redis-server';
import { registerKey, startStack } from '../support/services';

type Stack = Awaited<ReturnType<typeof startStack>>;

/** Prometheus metrics after real requests. */
describe('metrics on both services', () => {
  let redis: RedisServer;
  let stack: Stack;
  let key: string;
  let gatewayMetrics: string;
  let catalogMetrics: string;

  beforeAll(async () => {
    redis = await RedisServer.start();
    stack = await startStack({ REDIS_URL: redis.url, QUOTA_FREE: '3' });
    key = await registerKey(stack.gateway.url);
    const get = (path: string, headers: Record<string, string> = { 'x-api-key': key }) =>
      fetch(`${stack.gateway.url}${path}`, { headers }).then((r) => r.arrayBuffer());
    await get('/v1/tools/langchain');
    await get('/v1/search?q=vector');
    await get('/v1/tools/no-such-tool');
    await get('/v1/tools'); // the fourth: 429
    await get('/v1/tools', {});
    await get('/v1/tools', { 'x-api-key': 'tdk_not-a-real-key' });
    gatewayMetrics = await stack.gateway.metrics();
    catalogMetrics = await stack.catalog.metrics();
  });

  afterAll(async () => {
    await stack.stop();
    await redis.stop();
  });

  const sample = (text: string, name: string, labels: Record<string, string>) => {
    const line = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith(`${name}{`) &&
          Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)),
      );
    return line === undefined ? undefined : Number(line.split(' ').at(-1));
  };

  test('HTTP requests by method, route template and status, with the service label', () => {
    expect(
      sample(gatewayMetrics, 'http_requests_total', {
        service: 'gateway',
        method: 'GET',
        route: '/v1/tools/:slug',
        status_code: '200',
      }),
    ).toBe(1);
    expect(
      sample(gatewayMetrics, 'http_requests_total', {
        route: '/v1/tools/:slug',
        status_code: '404',
      }),
    ).toBe(1);
    expect(
      sample(gatewayMetrics, 'http_requests_total', { route: '/v1/tools', status_code: '429' }),
    ).toBe(1);
    expect(
      sample(catalogMetrics, 'http_requests_total', {
        service: 'catalog',
        route: '/v1/search',
        status_code: '200',
      }),
    ).toBe(1);
    expect(
      sample(catalogMetrics, 'http_request_duration_seconds_count', {
        route: '/v1/tools/:slug',
        status_code: '200',
      }),
    ).toBe(1);
    expect(gatewayMetrics).toMatch(/^process_cpu_seconds_total\{service="gateway"\}/m);
    expect(catalogMetrics).toMatch(/^nodejs_eventloop_lag_p99_seconds\{service="catalog"\}/m);
  });

  test('gateway: quota decisions, auth failures, upstream timing, key cache', () => {
    expect(
      sample(gatewayMetrics, 'gateway_quota_decisions_total', { tier: 'free', outcome: 'allowed' }),
    ).toBe(3);
    expect(
      sample(gatewayMetrics, 'gateway_quota_decisions_total', {
        tier: 'free',
        outcome: 'rejected',
      }),
    ).toBe(1);
    expect(sample(gatewayMetrics, 'gateway_auth_failures_total', { reason: 'missing' })).toBe(1);
    expect(sample(gatewayMetrics, 'gateway_auth_failures_total', { reason: 'malformed' })).toBe(1);
    expect(
      sample(gatewayMetrics, 'gateway_upstream_duration_seconds_count', {
        route: '/v1/search',
        status_code: '200',
      }),
    ).toBe(1);
    // Four keyed requests: the first looks the new key up; the key store's change log, polled,
    // then brings its creation back once, which drops it from the cache once more.
    expect(
      sample(gatewayMetrics, 'gateway_key_cache_lookups_total', { result: 'hit' }),
    ).toBeGreaterThanOrEqual(2);
    expect(sample(gatewayMetrics, 'gateway_quota_insurance_active', {})).toBe(0);
  });

  test('catalog: search and store-operation durations by store', () => {
    expect(
      sample(catalogMetrics, 'catalog_search_duration_seconds_count', { store: 'embedded' }),
    ).toBe(1);
    expect(
      sample(catalogMetrics, 'catalog_store_operation_duration_seconds_count', {
        store: 'embedded',
        operation: 'getTool',
      }),
    ).toBe(2);
  });

  test('no label holds an API key, an email or a raw URL', () => {
    for (const text of [gatewayMetrics, catalogMetrics]) {
      expect(text).not.toContain('tdk_');
      expect(text).not.toContain('@example.com');
      expect(text).not.toContain('langchain');
      expect(text).not.toContain('q=vector');
      expect(text).not.toContain('no-such-tool');
    }
  });
});
