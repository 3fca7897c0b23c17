import type { Redis } from 'ioredis';
import { QuotaLimiter } from '../services/gateway/src/quota/quota-limiter';
import { type RedisClient, dataNodes, redisConnector } from '../services/shared/redis';
import { RedisCluster } from '../test/support/redis-cluster';
import { RedisServer } from '../test/support/redis-server';
import { ServiceProcess, tempDataDir } from '../test/support/services';
import { Started, createKey, redisPidOf } from './bench-services';
import { pin } from './cpu-layout';
import { processCpuMicros } from './load';
import {
  type Measurement,
  type Target,
  layout,
  measureRepeatedly,
  ratio,
  redisCalls,
  report,
} from './measure';

/**
 * `npm run bench -- capacity`: the per-request costs docs/capacity.md builds its model on, all
 * from one run. Redis CPU per admitted request on one server and on a three-master cluster,
 * with many keys and with one hot key (QuotaLimiter in this process, as a gateway runs it);
 * Redis memory per daily counter; gateway CPU per request on a hit and on a miss, and catalog
 * CPU per miss (the services in their own processes under wrk); memory per cached answer and
 * per pod at rest.
 */

const PATH = '/v1/tools?limit=20';
/** Quota calls kept in flight by this process, as many concurrent requests of a gateway. */
const IN_FLIGHT = 64;
const QUOTA_MS = 3_000;
/** Keys of the "many keys" distribution: a key seldom repeats within a turn. */
const MANY_KEYS = 100_000;
/** Answers put in the response cache to measure what one costs. */
const CACHED_ENTRIES = 2_000;

interface QuotaFigures {
  admittedPerSecond: number;
  /** Redis's CPU (every master's together) per admitted request, µs. */
  redisCpuMicrosPerRequest: number;
  /** This process's CPU per admitted request (ioredis, rate-limiter-flexible, the limiter), µs. */
  clientCpuMicrosPerRequest: number;
  /** Script calls Redis ran per admitted request. */
  commandsPerRequest: number;
}

/** Script calls (EVAL, EVALSHA) every master of `client` has run so far. */
async function scriptCalls(nodes: Redis[]): Promise<number> {
  let calls = 0;
  for (const node of nodes) calls += redisCalls(await node.info('commandstats')).sent;
  return calls;
}

const redisPids = (nodes: Redis[]): Promise<number[]> => Promise.all(nodes.map(redisPidOf));

const cpuOf = async (pids: number[]) =>
  (await Promise.all(pids.map(processCpuMicros))).reduce((a, b) => a + b, 0);

/**
 * IN_FLIGHT callers taking quota units in a loop for QUOTA_MS, the key of each call picked by
 * `key`: what Redis and this process spend per admitted request. Redis runs alone on the
 * measured CPU.
 */
async function quotaLoad(client: RedisClient, key: () => string): Promise<QuotaFigures> {
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  const nodes = dataNodes(client);
  const pids = await redisPids(nodes);
  if (layout) for (const pid of pids) pin(pid, layout.measured);
  const quota = new QuotaLimiter({
    quotas: { free: 1e9, pro: 1e9, enterprise: 1e9 },
    clock: Date.now,
    redis: client,
  });
  let admitted = 0;
  let running = true;
  const caller = async () => {
    while (running) if ((await quota.consume(key(), 'free')).allowed) admitted += 1;
  };
  const run = async (ms: number) => {
    running = true;
    const callers = Array.from({ length: IN_FLIGHT }, caller);
    await new Promise((resolve) => setTimeout(resolve, ms));
    running = false;
    await Promise.all(callers);
  };
  try {
    await run(1_000); // warm-up: connections, scripts loaded, code optimized
    admitted = 0;
    const [redisBefore, callsBefore] = [await cpuOf(pids), await scriptCalls(nodes)];
    const cpu = process.cpuUsage();
    const started = performance.now();
    await run(QUOTA_MS);
    const used = process.cpuUsage(cpu);
    const seconds = (performance.now() - started) / 1000;
    const [redisAfter, callsAfter] = [await cpuOf(pids), await scriptCalls(nodes)];
    const per = (n: number) => Math.round((n / admitted) * 100) / 100;
    return {
      admittedPerSecond: Math.round(admitted / seconds),
      redisCpuMicrosPerRequest: per(redisAfter - redisBefore),
      clientCpuMicrosPerRequest: per(used.user + used.system),
      commandsPerRequest: Math.round(((callsAfter - callsBefore) / admitted) * 1000) / 1000,
    };
  } finally {
    quota.close();
    if (layout) for (const pid of pids) pin(pid, layout.others);
  }
}

/** Bytes of Redis memory per daily counter, from the counters the many-keys load made. */
async function counterBytes(client: Redis): Promise<number> {
  const memory = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
  const before = { bytes: await memory(), keys: await client.dbsize() };
  await quotaLoad(client, () => `capacity_${Math.floor(Math.random() * MANY_KEYS)}`);
  const after = { bytes: await memory(), keys: await client.dbsize() };
  return Math.round((after.bytes - before.bytes) / (after.keys - before.keys));
}

async function quotaSection(started: Started) {
  const server = started.add(await RedisServer.start(), (s) => s.stop());
  const cluster = started.add(await RedisCluster.start({ masters: 3 }), (c) => c.stop());
  const single = started.add(
    redisConnector({ REDIS_URL: server.url })!.connect('capacity', { hotPath: true }),
    (c) => c.disconnect(),
  );
  const sharded = started.add(
    redisConnector(cluster.settings)!.connect('capacity', { hotPath: true }),
    (c) => c.disconnect(),
  );
  const many = () => `key_${Math.floor(Math.random() * MANY_KEYS)}`;
  const hot = () => 'key_hot';
  const bytesPerCounter = await counterBytes(started.add(server.client(), (c) => c.disconnect()));
  const figures: Record<string, QuotaFigures> = {
    'one Redis, many keys': await quotaLoad(single, many),
    'one Redis, one hot key': await quotaLoad(single, hot),
    'cluster of 3, many keys': await quotaLoad(sharded, many),
    'cluster of 3, one hot key': await quotaLoad(sharded, hot),
  };
  console.log(
    `\nQuota on Redis: ${IN_FLIGHT} decisions in flight from this process, ${QUOTA_MS / 1000} s ` +
      `each; "many keys" picks one of ${MANY_KEYS.toLocaleString('en')} at random; Redis alone ` +
      'on the measured CPU:',
  );
  console.table(figures);
  console.log(`Redis memory per daily counter: ${bytesPerCounter} bytes`);
  return { figures, bytesPerCounter };
}

/** `name` of a Prometheus text page, the first series. */
function gauge(page: string, name: string): number {
  return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(page)?.[1] ?? NaN);
}

/** What a process holds: its resident set and its V8 heap plus Buffers, in bytes. */
async function memoryOf(service: ServiceProcess) {
  const page = await service.metrics();
  return {
    rss: gauge(page, 'process_resident_memory_bytes'),
    heapAndBuffers:
      gauge(page, 'nodejs_heap_size_used_bytes') + gauge(page, 'nodejs_external_memory_bytes'),
  };
}

const MiB = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

/** Memory at rest of a gateway and a catalog, and what one more cached answer costs the gateway. */
async function memorySection(gateway: ServiceProcess, catalog: ServiceProcess, key: string) {
  const get = (url: string) =>
    fetch(`${gateway.url}${url}`, { headers: { 'x-api-key': key } }).then(async (r) => {
      const body = await r.arrayBuffer();
      return { xCache: r.headers.get('x-cache'), bytes: body.byteLength };
    });
  for (let i = 0; i < 200; i++) await get(PATH);
  await new Promise((r) => setTimeout(r, 2_000));
  const atRest = { gateway: await memoryOf(gateway), catalog: await memoryOf(catalog) };
  // Each URL twice: the cache keeps an answer at its second request (admission).
  const urls = Array.from({ length: CACHED_ENTRIES }, (_, i) => `${PATH}&entry=${i}`);
  let bodyBytes = 0;
  for (let i = 0; i < urls.length; i += 32) {
    const slice = urls.slice(i, i + 32);
    for (const round of [0, 1]) {
      const answers = await Promise.all(slice.map(get));
      if (round === 0) bodyBytes += answers.reduce((sum, a) => sum + a.bytes, 0);
    }
  }
  const kept = (await get(urls[0]!)).xCache;
  await new Promise((r) => setTimeout(r, 2_000));
  const filled = await memoryOf(gateway);
  // The resident set, not the heap: what the pod's memory limit counts, and the heap's used
  // bytes move with garbage not yet collected by more than the entries add.
  const perEntry = {
    bodyBytes: Math.round(bodyBytes / CACHED_ENTRIES),
    rssBytes: Math.round((filled.rss - atRest.gateway.rss) / CACHED_ENTRIES),
  };
  const rest = {
    'gateway RSS MiB': MiB(atRest.gateway.rss),
    'gateway heap + Buffers MiB': MiB(atRest.gateway.heapAndBuffers),
    'catalog RSS MiB': MiB(atRest.catalog.rss),
    'catalog heap + Buffers MiB': MiB(atRest.catalog.heapAndBuffers),
  };
  console.log('\nMemory at rest (after 200 requests, 2 s idle):');
  console.table(rest);
  console.log(
    `Per cached answer of ${PATH} (${CACHED_ENTRIES} answers cached, X-Cache of a repeat: ` +
      `${kept}):`,
    perEntry,
  );
  return { atRest: rest, perCachedEntry: perEntry, repeatXCache: kept };
}

async function servicesSection(started: Started) {
  const redis = started.add(await RedisServer.start(), (r) => r.stop());
  const client = started.add(redis.client(), (c) => c.disconnect());
  const redisPid = await redisPidOf(client);
  const dataDir = tempDataDir();
  const key = await createKey('free', { DATA_DIR: dataDir, REDIS_URL: redis.url });
  const stop = (service: ServiceProcess) => service.stop();
  const catalog = started.add(await ServiceProcess.start('catalog', {}), stop);
  const env = {
    CATALOG_URL: catalog.url,
    REDIS_URL: redis.url,
    DATA_DIR: dataDir,
    QUOTA_FREE: '100000000',
  };
  const gateway = started.add(await ServiceProcess.start('gateway', env), stop);
  const cacheOff = started.add(
    await ServiceProcess.start('gateway', { ...env, RESPONSE_CACHE: 'off' }),
    stop,
  );
  const fresh = started.add(await ServiceProcess.start('gateway', env), stop);
  for (const service of [catalog, gateway, cacheOff, fresh]) {
    service.child.stdout?.removeAllListeners('data').resume();
    if (layout) pin(service.child.pid!, layout.others);
  }
  if (layout) pin(redisPid, layout.others);
  const memory = await memorySection(fresh, catalog, key);

  const alongside = { catalog: catalog.child.pid!, redis: redisPid };
  const at = (service: ServiceProcess, uniqueUrls = false): Target => ({
    pid: service.child.pid!,
    url: `${service.url}${PATH}`,
    headers: { 'x-api-key': key },
    uniqueUrls,
    alongside,
  });
  const T = {
    hit: 'gateway hit',
    missCatalogHit: 'gateway miss, catalog hit',
    missCatalogMiss: 'gateway miss, catalog miss',
  };
  const { results } = await measureRepeatedly({
    [T.hit]: at(gateway),
    [T.missCatalogHit]: at(cacheOff),
    [T.missCatalogMiss]: at(gateway, true),
  });
  report(
    'Capacity: one Free key, cache hits, misses the catalog answers from its cache (gateway ' +
      'cache off), misses of both (unique URLs)',
    results,
  );
  const perRequest = (r: Measurement, name: string) =>
    Math.round(r.alongsideCpuMicros![name]! / r.requests);
  const costs = Object.fromEntries(
    Object.entries(results).map(([name, r]) => [
      name,
      {
        'gateway CPU µs/req': r.cpuMicrosPerRequest,
        'catalog CPU µs/req': perRequest(r, 'catalog'),
        'Redis CPU µs/req (one key)': perRequest(r, 'redis'),
        'gateway req/s on one CPU': r.requestsPerSecond,
      },
    ]),
  );
  console.log('\nCPU per request of each process, same runs:');
  console.table(costs);
  const hit = results[T.hit]!.cpuMicrosPerRequest;
  const ratios = {
    'gateway miss (catalog hit) ÷ hit': ratio(results[T.missCatalogHit]!.cpuMicrosPerRequest, hit),
    'gateway miss (catalog miss) ÷ hit': ratio(
      results[T.missCatalogMiss]!.cpuMicrosPerRequest,
      hit,
    ),
    'catalog per catalog miss ÷ gateway hit': ratio(
      perRequest(results[T.missCatalogMiss]!, 'catalog'),
      hit,
    ),
    'catalog per catalog hit ÷ gateway hit': ratio(
      perRequest(results[T.missCatalogHit]!, 'catalog'),
      hit,
    ),
  };
  console.log(ratios);
  return { results, costs, ratios, memory };
}

export async function capacityBench() {
  const started = new Started();
  try {
    const quota = await quotaSection(started);
    const services = await servicesSection(started);
    return { quota, ...services };
  } finally {
    await started.stopAll();
  }
}
