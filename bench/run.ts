import { fork } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { availableParallelism } from 'node:os';
import { setTimeout } from 'node:timers/promises';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { INTERNAL_HEADERS } from '../services/shared/tiers';
import { RedisServer } from '../test/support/redis-server';
import { INTERNAL_TOKEN, ServiceProcess, keysCli, tempDataDir } from '../test/support/services';
import { cpuLayout, pin, stealTicks } from './cpu-layout';
import { keyStoreBench } from './key-store-bench';
import { searchBench } from './search-bench';
import { type LoadResult, load, processCpuMicros } from './load';

/**
 * `npm run bench`: throughput and cost figures for docs/performance.md. Needs the build
 * (`npm run build`) and redis-server on PATH. Each figure comes from keep-alive load by
 * autocannon in this process against services in their own processes.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);
const SEARCH_QUERY = 'vector database';
const layout = cpuLayout();
/** Steal above this share of the machine's CPU makes a run's figures unreliable. */
const STEAL_WARNING = 10;

const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

function table(rows: Record<string, LoadResult>): void {
  console.table(
    Object.fromEntries(
      Object.entries(rows).map(([name, r]) => [
        name,
        {
          'req/s': r.requestsPerSecond,
          'p50 ms': r.latencyP50Ms,
          'p99 ms': r.latencyP99Ms,
          non2xx: r.non2xx,
          errors: r.errors,
        },
      ]),
    ),
  );
}

/** Starts one of bench/'s own servers (TypeScript, through tsx) and waits for its port. */
async function forkBenchServer(file: string, env: Record<string, string> = {}) {
  const child = fork(path.join(__dirname, file), {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, INTERNAL_TOKEN, ...env },
    stdio: 'inherit',
  });
  const { port } = await new Promise<{ port: number }>((resolve) =>
    child.once('message', resolve as never),
  );
  return { child, url: `http://127.0.0.1:${port}` };
}

async function catalogBench() {
  const { child, url: base } = await forkBenchServer('catalog-bench-server.ts');
  const headers = { [INTERNAL_HEADERS.token]: INTERNAL_TOKEN, [INTERNAL_HEADERS.tier]: 'free' };
  const target = (url: string, uniqueUrls = false): Target => ({
    pid: child.pid!,
    url: `${base}${url}`,
    headers,
    uniqueUrls,
  });
  const search = `/v1/search?q=${encodeURIComponent(SEARCH_QUERY)}`;
  try {
    const { results } = await measureRepeatedly({
      static: target('/static'),
      tools: target('/v1/tools?limit=20'),
      search: target(search),
      'tools, cache missed': target('/v1/tools?limit=20', true),
      'search, cache missed': target(search, true),
    });
    report(
      'Catalog: routes against a static-JSON route serving the same bytes, same process',
      results,
    );
    const vsStatic = (r: Measurement) =>
      ratio(r.requestsPerSecond, results.static.requestsPerSecond);
    const ratios = {
      toolsVsStatic: vsStatic(results.tools),
      searchVsStatic: vsStatic(results.search),
      toolsMissVsStatic: vsStatic(results['tools, cache missed']),
      searchMissVsStatic: vsStatic(results['search, cache missed']),
    };
    console.log(`ratio /v1/tools?limit=20 : static = ${ratios.toolsVsStatic} (goal >= 0.67)`);
    console.log(
      `ratio /v1/search?q=${SEARCH_QUERY} : static = ${ratios.searchVsStatic} (goal >= 0.67)`,
    );
    return { results, ratios };
  } finally {
    child.kill('SIGTERM');
  }
}

/**
 * Commands in INFO commandstats: `sent` counts the commands clients send to run a script
 * (EVALSHA/EVAL: one round trip each), `executed` every command Redis executed, including those
 * the quota script runs inside itself.
 */
function redisCalls(commandstats: string): { sent: number; executed: number } {
  let sent = 0;
  let executed = 0;
  for (const [, name, calls] of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (name === 'info') continue;
    executed += Number(calls);
    if (name === 'evalsha' || name === 'eval') sent += Number(calls);
  }
  return { sent, executed };
}

const perRequest = (n: number, requests: number) => Math.round((n / requests) * 1000) / 1000;

async function createKey(tier: string, env: Record<string, string>): Promise<string> {
  const email = `bench-${tier}-${Date.now()}@example.com`;
  const created = (await keysCli(
    ['create', '--tier', tier, '--email', email, '--name', 'Bench'],
    env,
  )) as {
    apiKey: string;
  };
  return created.apiKey;
}

interface Target {
  pid: number;
  url: string;
  headers: Record<string, string>;
  /** Every request a URL of its own, so no response cache can answer. */
  uniqueUrls?: boolean;
  /** Quota work counted during the measured part: Redis commands and admitted requests. */
  quota?: { redis: Redis; admitted: () => Promise<number> };
}

interface Measurement extends LoadResult {
  cpuMicrosPerRequest: number;
  /** Redis commands and admitted requests during the measured part, for a target with quota. */
  quota?: { sent: number; executed: number; admitted: number };
  /** Share of the machine's CPU time the hypervisor stole during the run. */
  stealPercent: number;
}

/**
 * One measured run against a server: a 1 s warm-up, then SECONDS of load, with the server's CPU
 * time read around the measured part only. The server has the measured CPU to itself meanwhile.
 */
async function measure(target: Target): Promise<Measurement> {
  if (layout) pin(target.pid, layout.measured);
  try {
    const options = {
      headers: target.headers,
      connections: CONNECTIONS,
      uniqueUrls: target.uniqueUrls ?? false,
    };
    await load(target.url, { ...options, seconds: 1 });
    // Requests still in flight when a load stops reach the server and Redis too: let them end.
    await setTimeout(250);
    const quotaBefore = target.quota && (await quotaCounts(target.quota));
    const cpuBefore = await processCpuMicros(target.pid);
    const stealBefore = stealTicks();
    const result = await load(target.url, { ...options, seconds: SECONDS });
    const stolen = stealTicks() - stealBefore;
    const cpuAfter = await processCpuMicros(target.pid);
    await setTimeout(250);
    const quotaAfter = target.quota && (await quotaCounts(target.quota));
    return {
      ...result,
      ...(quotaBefore &&
        quotaAfter && {
          quota: {
            sent: quotaAfter.sent - quotaBefore.sent,
            executed: quotaAfter.executed - quotaBefore.executed,
            admitted: quotaAfter.admitted - quotaBefore.admitted,
          },
        }),
      cpuMicrosPerRequest: Math.round((cpuAfter - cpuBefore) / result.requests),
      stealPercent: Math.round((stolen / (SECONDS * 100 * availableParallelism())) * 1000) / 10,
    };
  } finally {
    if (layout) pin(target.pid, layout.others);
  }
}

async function quotaCounts({ redis, admitted }: NonNullable<Target['quota']>) {
  return { ...redisCalls(await redis.info('commandstats')), admitted: await admitted() };
}

/** Free-tier requests the gateway admitted so far, from its own metrics. */
async function admittedFree(service: ServiceProcess): Promise<number> {
  const line = /^gateway_quota_decisions_total\{[^}]*tier="free",outcome="allowed"[^}]*\} (\d+)/m;
  return Number(line.exec(await service.metrics())?.[1] ?? 0);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/** The run whose CPU per request is the median of the repeats, so one noisy run cannot lead. */
function medianRun(runs: Measurement[]): Measurement {
  const cpu = median(runs.map((r) => r.cpuMicrosPerRequest));
  return runs.find((r) => r.cpuMicrosPerRequest === cpu)!;
}

/** Measures every target REPEATS times, in turn, so slow spells of the machine hit them all. */
async function measureRepeatedly<Name extends string>(targets: Record<Name, Target>) {
  const names = Object.keys(targets) as Name[];
  const runs = Object.fromEntries(names.map((name) => [name, [] as Measurement[]])) as Record<
    Name,
    Measurement[]
  >;
  for (let repeat = 0; repeat < REPEATS; repeat++) {
    for (const name of names) runs[name].push(await measure(targets[name]));
  }
  const results = Object.fromEntries(names.map((name) => [name, medianRun(runs[name])])) as Record<
    Name,
    Measurement
  >;
  return { runs, results };
}

function report(title: string, results: Record<string, Measurement>): void {
  const where = layout
    ? `the measured server alone on CPU ${layout.measured}, the rest on CPU ${layout.others}`
    : 'nothing pinned (no taskset, or one CPU)';
  console.log(`\n${title}\nMedian of ${REPEATS} runs by CPU per request; ${where}`);
  table(results);
  console.table(
    Object.fromEntries(
      Object.entries(results).map(([name, r]) => [
        name,
        { 'CPU µs/req': r.cpuMicrosPerRequest, 'steal %': r.stealPercent },
      ]),
    ),
  );
  const disturbed = Object.entries(results).filter(([, r]) => r.stealPercent > STEAL_WARNING);
  if (disturbed.length > 0) {
    console.log(
      `Warning: the hypervisor took over ${STEAL_WARNING} % of the CPU during ` +
        `${disturbed.map(([name]) => name).join(', ')}: those figures are not comparable; run again.`,
    );
  }
}

/**
 * The gateway in front of the catalog, with Redis: Free-tier traffic (`/v1/tools?limit=20`)
 * through the gateway, through the reference proxy (reply-from alone, the design's floor) and
 * sent to the catalog directly, each measured REPEATS times in turn; the gateway with tracing
 * on; and Redis commands per admitted and per exhausted request.
 */
async function gatewayBench() {
  const redis = await RedisServer.start();
  const client = redis.client();
  const dataDir = tempDataDir();
  const catalog = await ServiceProcess.start('catalog', {});
  const gatewayEnv = {
    CATALOG_URL: catalog.url,
    REDIS_URL: redis.url,
    DATA_DIR: dataDir,
    QUOTA_FREE: '100000000',
    QUOTA_PRO: '10',
  };
  const gateway = await ServiceProcess.start('gateway', gatewayEnv);
  const traced = await ServiceProcess.start('gateway', {
    ...gatewayEnv,
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await startSink()}`,
  });
  const reference = await forkBenchServer('reference-proxy-server.ts', {
    CATALOG_URL: catalog.url,
  });
  // The services' log lines are not kept in memory during load.
  for (const service of [catalog, gateway, traced])
    service.child.stdout?.removeAllListeners('data').resume();
  if (layout) {
    const redisPid = Number(/process_id:(\d+)/.exec(await client.info('server'))![1]);
    for (const child of [catalog.child, gateway.child, traced.child, reference.child])
      pin(child.pid!, layout.others);
    pin(redisPid, layout.others);
  }
  const storeEnv = { DATA_DIR: dataDir, REDIS_URL: redis.url };
  const keyHeaders = { 'x-api-key': await createKey('free', storeEnv) };
  const exhaustedKey = await createKey('pro', storeEnv);
  const path = '/v1/tools?limit=20';
  const targets = {
    'direct catalog': {
      pid: catalog.child.pid!,
      url: `${catalog.url}${path}`,
      headers: { [INTERNAL_HEADERS.token]: INTERNAL_TOKEN, [INTERNAL_HEADERS.tier]: 'free' },
    },
    'reference proxy (reply-from only)': {
      pid: reference.child.pid!,
      url: `${reference.url}${path}`,
      headers: {},
    },
    gateway: {
      pid: gateway.child.pid!,
      url: `${gateway.url}${path}`,
      headers: keyHeaders,
      quota: { redis: client, admitted: () => admittedFree(gateway) },
    },
    'gateway, tracing on': {
      pid: traced.child.pid!,
      url: `${traced.url}${path}`,
      headers: keyHeaders,
    },
  } satisfies Record<string, Target>;
  try {
    const { runs, results } = await measureRepeatedly(targets);
    for (let i = 0; i < 10; i++) {
      await fetch(`${gateway.url}/v1/categories`, { headers: { 'x-api-key': exhaustedKey } });
    }
    const exhaustedBefore = redisCalls(await client.info('commandstats'));
    const limited = await load(`${gateway.url}/v1/categories`, {
      headers: { 'x-api-key': exhaustedKey },
      seconds: 2,
      connections: CONNECTIONS,
    });
    const exhaustedAfter = redisCalls(await client.info('commandstats'));

    const direct = results['direct catalog'];
    const total = (pick: (counts: NonNullable<Measurement['quota']>) => number) =>
      runs.gateway.reduce((sum, r) => sum + pick(r.quota!), 0);
    const admitted = total((q) => q.admitted);
    const figures = {
      gatewayVsDirect: ratio(results.gateway.requestsPerSecond, direct.requestsPerSecond),
      referenceVsDirect: ratio(
        results['reference proxy (reply-from only)'].requestsPerSecond,
        direct.requestsPerSecond,
      ),
      cpuMicrosPerRequest: Object.fromEntries(
        Object.entries(runs).map(([name, list]) => [
          name,
          list.map((r) => r.cpuMicrosPerRequest).join(' / '),
        ]),
      ),
      admittedRequests: admitted,
      redisCommandsSentPerAdmittedRequest: perRequest(
        total((q) => q.sent),
        admitted,
      ),
      redisCommandsExecutedPerAdmittedRequest: perRequest(
        total((q) => q.executed),
        admitted,
      ),
      redisCommandsPerExhaustedRequest: perRequest(
        exhaustedAfter.executed - exhaustedBefore.executed,
        limited.requests,
      ),
      exhaustedRequests: limited.requests,
      tracingCpuMicrosPerRequest:
        results['gateway, tracing on'].cpuMicrosPerRequest - results.gateway.cpuMicrosPerRequest,
    };
    report(`Gateway, Redis ${redis.url}`, results);
    table({ 'exhausted key (429)': limited });
    console.log(figures);
    return { runs, results, limited, figures };
  } finally {
    client.disconnect();
    reference.child.kill('SIGTERM');
    await Promise.all([gateway.stop(), traced.stop(), catalog.stop()]);
    await redis.stop();
  }
}

/** Body bytes of one answer as sent, not decoded (fetch would decode them). */
function bodyBytes(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (response) => {
      let bytes = 0;
      response.on('data', (chunk: Buffer) => (bytes += chunk.length));
      response.on('end', () => resolve(bytes));
    }).on('error', reject);
  });
}

/**
 * Compression at the catalog: the biggest page (`/v1/tools?limit=100`, Pro, from the response
 * cache) and the streamed export (Enterprise, compressed on the fly), each as identity, gzip
 * and Brotli; and the gateway relaying the page as identity and as gzip (it only streams the
 * catalog's bytes). Bytes and CPU per request of each encoding, as ratios to identity.
 */
async function compressionBench() {
  const dataDir = tempDataDir();
  const catalog = await ServiceProcess.start('catalog', {});
  const gateway = await ServiceProcess.start('gateway', {
    CATALOG_URL: catalog.url,
    DATA_DIR: dataDir,
    QUOTA_ENTERPRISE: '100000000',
  });
  for (const service of [catalog, gateway]) {
    service.child.stdout?.removeAllListeners('data').resume();
    if (layout) pin(service.child.pid!, layout.others);
  }
  const key = await createKey('enterprise', { DATA_DIR: dataDir });
  const gzip = { 'accept-encoding': 'gzip' };
  const br = { 'accept-encoding': 'br' };
  const atCatalog = (url: string, tier: string, accept = {}): Target => ({
    pid: catalog.child.pid!,
    url: `${catalog.url}${url}`,
    headers: { [INTERNAL_HEADERS.token]: INTERNAL_TOKEN, [INTERNAL_HEADERS.tier]: tier, ...accept },
  });
  const atGateway = (url: string, accept = {}): Target => ({
    pid: gateway.child.pid!,
    url: `${gateway.url}${url}`,
    headers: { 'x-api-key': key, ...accept },
  });
  const page = '/v1/tools?limit=100';
  const targets: Record<string, Target> = {
    page: atCatalog(page, 'pro'),
    'page, gzip': atCatalog(page, 'pro', gzip),
    'page, br': atCatalog(page, 'pro', br),
    export: atCatalog('/v1/export', 'enterprise'),
    'export, gzip': atCatalog('/v1/export', 'enterprise', gzip),
    'export, br': atCatalog('/v1/export', 'enterprise', br),
    'gateway page': atGateway(page),
    'gateway page, gzip': atGateway(page, gzip),
  };
  try {
    const { results } = await measureRepeatedly(targets);
    const bytes = Object.fromEntries(
      await Promise.all(
        Object.entries(targets).map(
          async ([name, t]) => [name, await bodyBytes(t.url, t.headers)] as const,
        ),
      ),
    );
    report('Compression: identity, gzip and Brotli at the catalog, through the gateway', results);
    const ratios = Object.fromEntries(
      Object.keys(targets)
        .filter((name) => name.includes(', '))
        .map((name) => {
          const identity = name.split(', ')[0]!;
          return [
            `${name} : ${identity}`,
            {
              'body bytes': `${bytes[name]} / ${bytes[identity]}`,
              'bytes ratio': ratio(bytes[name]!, bytes[identity]!),
              'CPU ratio': ratio(
                results[name]!.cpuMicrosPerRequest,
                results[identity]!.cpuMicrosPerRequest,
              ),
            },
          ];
        }),
    );
    console.table(ratios);
    return { results, bytes, ratios };
  } finally {
    await Promise.all([gateway.stop(), catalog.stop()]);
  }
}

async function main(): Promise<void> {
  if (layout) pin(process.pid, layout.others);
  // `npm run bench -- key-store` (or `-- catalog`, `-- search`) runs that section alone.
  const only = process.argv[2];
  if (only === 'search') {
    await searchBench();
    process.exit(0);
  }
  const keyStore = await keyStoreBench();
  if (only === 'key-store') process.exit(0);
  const search = await searchBench();
  const catalog = await catalogBench();
  if (only === 'catalog') process.exit(0);
  const gateway = await gatewayBench();
  const compression = await compressionBench();
  const out = path.join(__dirname, 'results');
  mkdirSync(out, { recursive: true });
  const file = path.join(out, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      {
        seconds: SECONDS,
        connections: CONNECTIONS,
        repeats: REPEATS,
        layout,
        keyStore,
        search,
        catalog,
        gateway,
        compression,
      },
      null,
      2,
    ),
  );
  console.log(`\nResults written to ${path.relative(process.cwd(), file)}`);
  process.exit(0);
}

/** An OTLP/HTTP endpoint that accepts and drops spans, so export cost is real but bounded. */
async function startSink(): Promise<number> {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  server.unref();
  return (server.address() as { port: number }).port;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
