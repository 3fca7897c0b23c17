import { loadCatalogConfig } from '../../services/catalog/src/config';
import { loadGatewayConfig } from '../../services/gateway/src/config';
import { ConfigError } from '../../services/shared/config';
import { redisConnector } from '../../services/shared/redis';
import { type RedisSettings, redisTarget } from '../../services/shared/redis-config';
import { RedisServer } from '../support/redis-server';

const token = { INTERNAL_TOKEN: 'x'.repeat(16) };

/** How a deployment names its Redis: one server, a cluster or Sentinel, and never two at once. */
describe('Redis settings', () => {
  test('none: no Redis; REDIS_URL: one server', () => {
    expect(redisTarget({}).target).toBeUndefined();
    expect(redisTarget({ REDIS_URL: 'rediss://:pw@cache:6380/0' })).toEqual({
      target: { mode: 'single', url: 'rediss://:pw@cache:6380/0' },
      problems: [],
    });
  });

  test('REDIS_CLUSTER_NODES: host:port seeds, comma-separated, IPv6 in brackets, 6379 by default', () => {
    expect(
      redisTarget({
        REDIS_CLUSTER_NODES: 'cfg.cache.amazonaws.com:6379, 10.0.0.2:7001,[::1]:7002,redis-0',
      }),
    ).toEqual({
      target: {
        mode: 'cluster',
        nodes: [
          { host: 'cfg.cache.amazonaws.com', port: 6379 },
          { host: '10.0.0.2', port: 7001 },
          { host: '::1', port: 7002 },
          { host: 'redis-0', port: 6379 },
        ],
      },
      problems: [],
    });
  });

  test('REDIS_SENTINELS: the sentinels (26379 by default) and the master group', () => {
    expect(
      redisTarget({ REDIS_SENTINELS: 's1,s2:26380', REDIS_SENTINEL_MASTER: 'cache' }).target,
    ).toEqual({
      mode: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26380 },
      ],
      master: 'cache',
    });
  });

  test('two kinds at once, or a bad address, fail the configuration with the names', () => {
    let error: unknown;
    try {
      loadGatewayConfig({ ...token, REDIS_URL: 'redis://a', REDIS_CLUSTER_NODES: 'b:7000' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain('REDIS_URL, REDIS_CLUSTER_NODES: Set one of them');
    expect(() =>
      loadCatalogConfig({ ...token, REDIS_CLUSTER_NODES: 'a:7000,b:port,c:70000' }),
    ).toThrow(/REDIS_CLUSTER_NODES: 'b:port' is not host:port\n.*'c:70000' is not host:port/);
    expect(() => loadGatewayConfig({ ...token, REDIS_SENTINELS: ' , ' })).toThrow(
      /REDIS_SENTINELS: Expected at least one host:port/,
    );
  });

  test('a CA file that cannot be read is a configuration error, before any connection', () => {
    expect(() =>
      redisConnector({ REDIS_CLUSTER_NODES: 'a:7000', REDIS_TLS_CA_FILE: '/nonexistent/ca.pem' }),
    ).toThrow(/REDIS_TLS_CA_FILE: cannot be read/);
  });
});

describe('credentials with REDIS_URL', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
    const client = server.client();
    await client.config('SET', 'requirepass', 'the-password');
    client.disconnect();
  });
  afterAll(() => server.stop());

  /** 'ready', or the first error of the connection. */
  const connects = (settings: RedisSettings) =>
    new Promise<string>((resolve) => {
      const client = redisConnector(settings)!.connect('credentials-test');
      const settle = (outcome: string) => {
        client.disconnect();
        resolve(outcome);
      };
      client.once('ready', () => settle('ready'));
      client.once('error', (err: Error) => settle(err.message));
    });
  const url = () => `redis://127.0.0.1:${server.port}`;

  test('REDIS_PASSWORD fills in a URL without one; a password in the URL wins', async () => {
    expect(await connects({ REDIS_URL: url(), REDIS_PASSWORD: 'the-password' })).toBe('ready');
    expect(
      await connects({
        REDIS_URL: `redis://:the-password@127.0.0.1:${server.port}`,
        REDIS_PASSWORD: 'stale',
      }),
    ).toBe('ready');
    expect(await connects({ REDIS_URL: url(), REDIS_PASSWORD: 'wrong' })).toMatch(
      /WRONGPASS|invalid/,
    );
  });
});
