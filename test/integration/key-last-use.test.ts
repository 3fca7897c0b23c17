import { LAST_USE_FLUSH_MS } from '../../services/gateway/src/keys/last-use';
import { RedisCluster } from '../support/redis-cluster';
import { RedisServer } from '../support/redis-server';
import { ServiceProcess, keyedGet, keysCli, tempDataDir } from '../support/services';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Last use (docs/api.md, "Key events and last use") measured on two gateway replicas under load:
 * every request is noted in memory, and a key costs at most one store write a minute across both.
 * A stack of its own, so no other key's use is written meanwhile.
 */
describe.each([
  ['the embedded stack', 'none'],
  ['Redis', 'server'],
  ['a Redis Cluster', 'cluster'],
] as const)('last use on %s', (_name, redisKind) => {
  let redis: RedisServer | RedisCluster | undefined;
  let catalog: ServiceProcess;
  const gateways: ServiceProcess[] = [];
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };

  beforeAll(async () => {
    if (redisKind === 'server') {
      const server = await RedisServer.start();
      env.REDIS_URL = server.url;
      redis = server;
    } else if (redisKind === 'cluster') {
      const cluster = await RedisCluster.start({ masters: 3 });
      Object.assign(env, cluster.env);
      redis = cluster;
    }
    catalog = await ServiceProcess.start('catalog', { ...env, DATA_DIR: tempDataDir() });
    for (let i = 0; i < 2; i++) {
      // A quota the load never reaches: every request is admitted, so every one is a use.
      gateways.push(
        await ServiceProcess.start('gateway', {
          ...env,
          CATALOG_URL: catalog.url,
          QUOTA_PRO: '100000000',
        }),
      );
    }
  }, 90_000);
  afterAll(async () => {
    await Promise.all([...gateways.map((g) => g.stop()), catalog.stop()]);
    await redis?.stop();
  });

  const writes = async (gateway: ServiceProcess) => {
    const text = await (await fetch(`http://127.0.0.1:${gateway.metricsPort}/metrics`)).text();
    return Number(/^gateway_key_last_use_writes_total(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0);
  };

  test('two keys busy on both replicas past a write round: one write per key and minute', async () => {
    const keys: string[] = [];
    for (let i = 0; i < 2; i++) {
      const created = (await keysCli(
        ['create', '--tier', 'pro', '--email', `last-use-${i}@example.com`, '--name', 'Busy'],
        env,
      )) as { apiKey: string };
      keys.push(created.apiKey);
    }
    const unusedBefore = (await keysCli(['list', '--unused-for', '1d'], env)) as Json[];
    expect(unusedBefore).toEqual([]);
    const started = Date.now();
    let requests = 0;
    // Each replica flushes at least once while both keys are in use on both.
    while (Date.now() - started < LAST_USE_FLUSH_MS + 2_000) {
      const statuses = await Promise.all(
        gateways.flatMap((gateway) =>
          keys.map(async (key) => (await keyedGet(gateway.url, key, '/v1/categories')).status),
        ),
      );
      expect(statuses.every((s) => s === 200)).toBe(true);
      requests += statuses.length;
    }
    const minutes = Math.floor(Date.now() / 60_000) - Math.floor(started / 60_000) + 1;
    const written = (await Promise.all(gateways.map(writes))).reduce((a, b) => a + b, 0);
    console.log(
      `last use: ${requests} requests on 2 replicas, ${written} store writes for 2 keys over ${minutes} minute(s)`,
    );
    expect(written).toBeGreaterThanOrEqual(keys.length);
    expect(written).toBeLessThanOrEqual(keys.length * minutes);
    const listed = (await keysCli(['list'], env)) as Json[];
    for (const key of listed) {
      expect(Date.parse(key.lastUsedAt as string)).toBeGreaterThanOrEqual(started - 60_000);
    }
  }, 60_000);
});
