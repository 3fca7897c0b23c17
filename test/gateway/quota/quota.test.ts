import { RedisServer } from '../../support/redis-server';
import { ServiceProcess, registerKey, tempDataDir } from '../../support/services';

/**
 * Exact daily quotas (docs/api.md#quotas-and-rate-limit-headers) under concurrency, on one gateway
 * and on two sharing Redis.
 */
describe('daily quota under concurrency, real processes and Redis', () => {
  let redis: RedisServer;
  let catalog: ServiceProcess;
  const gateways: ServiceProcess[] = [];

  beforeAll(async () => {
    redis = await RedisServer.start();
    catalog = await ServiceProcess.start('catalog', {});
    const dataDir = tempDataDir();
    for (let i = 0; i < 2; i++) {
      gateways.push(
        await ServiceProcess.start('gateway', {
          CATALOG_URL: catalog.url,
          REDIS_URL: redis.url,
          DATA_DIR: dataDir,
          REGISTRATIONS_PER_HOUR: '1000',
        }),
      );
    }
  });

  afterAll(async () => {
    await Promise.all([...gateways.map((g) => g.stop()), catalog.stop()]);
    await redis.stop();
  });

  async function burst(urls: string[], key: string) {
    const statuses = await Promise.all(
      urls.map(async (url) => {
        const response = await fetch(`${url}/v1/tools?limit=1`, { headers: { 'x-api-key': key } });
        await response.arrayBuffer();
        return response.status;
      }),
    );
    return {
      ok: statuses.filter((s) => s === 200).length,
      limited: statuses.filter((s) => s === 429).length,
      other: statuses.filter((s) => s !== 200 && s !== 429),
    };
  }

  test('a fresh Free key hit by 150 concurrent requests admits exactly 100', async () => {
    const key = await registerKey(gateways[0]!.url);
    const result = await burst(Array(150).fill(gateways[0]!.url), key);
    expect(result).toEqual({ ok: 100, limited: 50, other: [] });
  });

  test('the same across two gateway processes sharing Redis', async () => {
    const key = await registerKey(gateways[0]!.url);
    // The second gateway learns of the new key through the shared key file.
    const urls = Array.from({ length: 150 }, (_, i) => gateways[i % 2]!.url);
    const result = await burst(urls, key);
    expect(result).toEqual({ ok: 100, limited: 50, other: [] });
  });

  test('a hot key: 400 concurrent requests over both gateways admit exactly 100, counted once', async () => {
    const key = await registerKey(gateways[0]!.url);
    const client = redis.client();
    const before = new Set(await client.keys('quota:*'));
    const urls = Array.from({ length: 400 }, (_, i) => gateways[i % 2]!.url);
    // Requests of one key read in one turn share one INCRBY n; the refused ones are given back.
    const result = await burst(urls, key);
    const counters = (await client.keys('quota:*')).filter((counter) => !before.has(counter));
    const counts = await Promise.all(counters.map((counter) => client.get(counter)));
    client.disconnect();
    expect(result).toEqual({ ok: 100, limited: 300, other: [] });
    expect(counts).toEqual(['100']);
  });

  test('an exhausted key costs no Redis command', async () => {
    const key = await registerKey(gateways[0]!.url);
    await burst(Array(100).fill(gateways[0]!.url), key);
    const client = redis.client();
    const before = await client.info('commandstats');
    const result = await burst(Array(20).fill(gateways[0]!.url), key);
    const after = await client.info('commandstats');
    client.disconnect();
    expect(result.limited).toBe(20);
    const calls = (stats: string) =>
      [
        ...stats.matchAll(/^cmdstat_(evalsha|eval|incrby|incr|pexpire|set|get):calls=(\d+)/gm),
      ].reduce((sum, m) => sum + Number(m[2]), 0);
    // The INFO call itself is not among the counted commands.
    expect(calls(after) - calls(before)).toBe(0);
  });
});
