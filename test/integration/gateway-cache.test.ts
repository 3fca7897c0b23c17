import { dataset } from '../support/catalog';
import { RedisServer } from '../support/redis-server';
import {
  CATALOG_CLI,
  ServiceProcess,
  importFile,
  freeAndProKeys,
  keyedGet,
  runCli,
  tempDataDir,
} from '../support/services';
import { TcpForwarder } from '../support/tcp-forwarder';
import { PROPAGATION_MS } from '../support/waits';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The gateway's response cache in the deployed shape: two gateway replicas, each reaching two
 * catalog replicas through a balancer, Redis for quotas and the change feed. Operators change
 * the catalog with the CLI while clients read through both gateways.
 */
describe('gateway response cache across replicas', () => {
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };
  let redis: RedisServer;
  let catalogs: ServiceProcess[];
  let balancer: TcpForwarder;
  let gateways: ServiceProcess[];
  let keys: Record<'free' | 'pro', string>;

  beforeAll(async () => {
    redis = await RedisServer.start();
    env.REDIS_URL = redis.url;
    catalogs = [];
    for (let i = 0; i < 2; i++) catalogs.push(await ServiceProcess.start('catalog', env));
    balancer = await TcpForwarder.start(catalogs.map((c) => c.port));
    gateways = [];
    for (let i = 0; i < 2; i++) {
      gateways.push(
        await ServiceProcess.start('gateway', {
          ...env,
          CATALOG_URL: balancer.url,
          QUOTA_FREE: '100000',
          QUOTA_PRO: '100000',
        }),
      );
    }
    keys = await freeAndProKeys(env, 'cache.example');
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await balancer.close();
    await Promise.all(catalogs.map((c) => c.stop()));
    await redis.stop();
  });

  const get = (
    gateway: ServiceProcess,
    url: string,
    tier: 'free' | 'pro' = 'free',
    headers: Record<string, string> = {},
  ) => keyedGet(gateway.url, keys[tier], url, headers);

  test('kept from the second read, a HIT from the third; miss and hit both take one unit and carry the quota headers', async () => {
    const url = `/v1/tools/${dataset.tools[3]!.slug}`;
    const once = await get(gateways[0]!, url); // relayed, remembered as asked
    const first = await get(gateways[0]!, url); // kept
    const second = await get(gateways[0]!, url);
    expect([once.status, first.status, second.status]).toEqual([200, 200, 200]);
    expect([once, first, second].map((a) => a.headers.get('x-cache'))).toEqual([
      'MISS',
      'MISS',
      'HIT',
    ]);
    expect(once.body).toEqual(first.body);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
    for (const answer of [first, second]) {
      expect(answer.headers.get('x-ratelimit-limit')).toBe('100000');
      expect(answer.headers.get('ratelimit-policy')).toBe('"daily";q=100000;w=86400');
      expect(answer.headers.get('x-catalog-version')).toBeNull();
    }
    expect(Number(first.headers.get('x-ratelimit-remaining'))).toBe(
      Number(second.headers.get('x-ratelimit-remaining')) + 1,
    );

    // A 304 from the cache is keyed and carries the quota headers, but takes no unit
    // (docs/api.md#conditional-requests-etag).
    const revalidated = await get(gateways[0]!, url, 'free', {
      'if-none-match': first.headers.get('etag')!,
    });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers.get('x-cache')).toBe('HIT');
    expect(Number(revalidated.headers.get('x-ratelimit-remaining'))).toBe(
      Number(second.headers.get('x-ratelimit-remaining')),
    );
  });

  test('Free and Pro never share an entry', async () => {
    const url = `/v1/tools/${dataset.tools[5]!.slug}`;
    const thrice = async (tier: 'free' | 'pro') => [
      await get(gateways[1]!, url, tier),
      await get(gateways[1]!, url, tier),
      await get(gateways[1]!, url, tier),
    ];
    const free = await thrice('free');
    const pro = await thrice('pro');
    expect(free.map((a) => a.headers.get('x-cache'))).toEqual(['MISS', 'MISS', 'HIT']);
    expect(pro.map((a) => a.headers.get('x-cache'))).toEqual(['MISS', 'MISS', 'HIT']);
    expect(pro[2]!.body).not.toEqual(free[2]!.body);
    expect(pro[2]!.headers.get('etag')).not.toBe(free[2]!.headers.get('etag'));
    // Pro sees fields Free does not (docs/api.md#authentication-errors), from the cache too.
    expect(Object.keys(pro[2]!.body.data).length).toBeGreaterThan(
      Object.keys(free[2]!.body.data).length,
    );
  });

  test('after a change no replica serves the old data past one second, nor ever again', async () => {
    // The first tool of the list, so the list shows it too.
    const first = (await get(gateways[0]!, '/v1/tools?limit=1', 'pro')).body.data[0].slug;
    const tool = dataset.tools.find((t) => t.slug === first)!;
    const urls = [`/v1/tools/${tool.slug}`, '/v1/tools?limit=20'];
    const pricingIn = (url: string, body: Json) =>
      url.includes('?')
        ? (body.data as Json[]).find((t) => t.slug === tool.slug)?.pricing
        : body.data.pricing;
    // Cached on both gateways, from both catalogs.
    for (const gateway of gateways) {
      for (const url of urls) {
        for (let i = 0; i < 3; i++) expect((await get(gateway, url, 'pro')).status).toBe(200);
      }
    }
    expect((await get(gateways[0]!, urls[0]!, 'pro')).headers.get('x-cache')).toBe('HIT');

    const changed = { ...tool, pricing: 'Changed behind the gateway cache' };
    const result = await runCli(CATALOG_CLI, ['import', importFile([changed])], env);
    expect(result.code).toBe(0);
    const changedAt = Date.now();

    // Read continuously through both gateways for two seconds: once a gateway served the new
    // data for a URL, it must never serve the old again; and a request sent a second or more
    // after the change, which reaches the gateway later still, gets the new data.
    const seenNew = new Set<string>();
    const late: string[] = [];
    const regressions: string[] = [];
    // Until a whole round was sent a second or more after the change, however long rounds take.
    let lateRound = false;
    while (!lateRound || Date.now() - changedAt < 2 * PROPAGATION_MS) {
      lateRound = Date.now() - changedAt >= PROPAGATION_MS;
      for (const [g, gateway] of gateways.entries()) {
        for (const url of urls) {
          const sentAt = Date.now();
          const answer = await get(gateway, url, 'pro');
          const fresh = pricingIn(url, answer.body) === changed.pricing;
          const where = `gateway ${g} ${url}`;
          if (fresh) seenNew.add(where);
          else if (seenNew.has(where)) regressions.push(where);
          else if (sentAt - changedAt >= PROPAGATION_MS) late.push(where);
        }
      }
    }
    expect({ late, regressions }).toEqual({ late: [], regressions: [] });
    expect(seenNew.size).toBe(4);
    // And it is cached again, at the new version.
    expect((await get(gateways[1]!, urls[0]!, 'pro')).headers.get('x-cache')).toBe('HIT');
  });

  test('the cache reports hits, misses and its size', async () => {
    const metrics = await gateways[0]!.metrics();
    const count = (result: string) =>
      Number(
        new RegExp(
          `^gateway_response_cache_requests_total\\{result="${result}"[^}]*\\} (\\d+)`,
          'm',
        ).exec(metrics)?.[1] ?? 0,
      );
    expect(count('hit')).toBeGreaterThan(0);
    expect(count('miss')).toBeGreaterThan(0);
    expect(metrics).toMatch(/^gateway_response_cache_bytes\{[^}]*\} [1-9]\d*$/m);
  });

  test('RESPONSE_CACHE=off: every read reaches the catalog, with no X-Cache', async () => {
    const uncached = await ServiceProcess.start('gateway', {
      ...env,
      CATALOG_URL: balancer.url,
      RESPONSE_CACHE: 'off',
    });
    try {
      const url = `/v1/tools/${dataset.tools[7]!.slug}`;
      const answers = [await get(uncached, url), await get(uncached, url)];
      expect(answers.map((a) => [a.status, a.headers.get('x-cache')])).toEqual([
        [200, null],
        [200, null],
      ]);
      expect(await uncached.metrics()).not.toMatch(/^gateway_response_cache_requests_total\{/m);
    } finally {
      await uncached.stop();
    }
  });
});
