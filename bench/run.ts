import { fork } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { INTERNAL_HEADERS } from '../services/shared/tiers';
import { RedisServer } from '../test/support/redis-server';
import { INTERNAL_TOKEN, ServiceProcess, keysCli, tempDataDir } from '../test/support/services';
import { type LoadResult, load, processCpuMicros } from './load';

/**
 * `npm run bench`: throughput and cost figures for docs/performance.md. Needs the build
 * (`npm run build`) and redis-server on PATH. Each figure comes from keep-alive load by
 * autocannon in this process against services in their own processes.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const SEARCH_QUERY = 'vector database';

const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
const run = (url: string, headers: Record<string, string> = {}, uniqueUrls = false) =>
  load(url, { headers, seconds: SECONDS, connections: CONNECTIONS, uniqueUrls });

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

async function catalogBench() {
  const child = fork(path.join(__dirname, 'catalog-bench-server.ts'), {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, INTERNAL_TOKEN },
    stdio: 'inherit',
  });
  const { port } = await new Promise<{ port: number }>((resolve) =>
    child.once('message', resolve as never),
  );
  const base = `http://127.0.0.1:${port}`;
  const headers = { [INTERNAL_HEADERS.token]: INTERNAL_TOKEN, [INTERNAL_HEADERS.tier]: 'free' };
  try {
    const results = {
      static: await run(`${base}/static`, headers),
      tools: await run(`${base}/v1/tools?limit=20`, headers),
      search: await run(`${base}/v1/search?q=${encodeURIComponent(SEARCH_QUERY)}`, headers),
      'tools, cache missed': await run(`${base}/v1/tools?limit=20`, headers, true),
      'search, cache missed': await run(
        `${base}/v1/search?q=${encodeURIComponent(SEARCH_QUERY)}`,
        headers,
        true,
      ),
    };
    console.log(
      '\nCatalog: routes against a static-JSON route serving the same bytes, same process',
    );
    table(results);
    const ratios = {
      toolsVsStatic: ratio(results.tools.requestsPerSecond, results.static.requestsPerSecond),
      searchVsStatic: ratio(results.search.requestsPerSecond, results.static.requestsPerSecond),
      toolsMissVsStatic: ratio(
        results['tools, cache missed'].requestsPerSecond,
        results.static.requestsPerSecond,
      ),
      searchMissVsStatic: ratio(
        results['search, cache missed'].requestsPerSecond,
        results.static.requestsPerSecond,
      ),
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

/**
 * The gateway in front of the catalog, with Redis: Free-tier traffic (`/v1/tools?limit=20`)
 * through the gateway against the same traffic sent to the catalog directly, the gateway's
 * CPU time per request, and Redis commands per admitted and per exhausted request.
 */
async function gatewayBench(label: string, extraEnv: Record<string, string>) {
  const redis = await RedisServer.start();
  const dataDir = tempDataDir();
  const catalog = await ServiceProcess.start('catalog', extraEnv);
  const gateway = await ServiceProcess.start('gateway', {
    CATALOG_URL: catalog.url,
    REDIS_URL: redis.url,
    DATA_DIR: dataDir,
    QUOTA_FREE: '100000000',
    QUOTA_PRO: '10',
    ...extraEnv,
  });
  // The services' log lines are not kept in memory during load.
  for (const service of [catalog, gateway])
    service.child.stdout?.removeAllListeners('data').resume();
  const storeEnv = { DATA_DIR: dataDir, REDIS_URL: redis.url };
  const freeKey = await createKey('free', storeEnv);
  const exhaustedKey = await createKey('pro', storeEnv);
  const client = redis.client();
  try {
    const directHeaders = {
      [INTERNAL_HEADERS.token]: INTERNAL_TOKEN,
      [INTERNAL_HEADERS.tier]: 'free',
    };
    const direct = await run(`${catalog.url}/v1/tools?limit=20`, directHeaders);

    const gatewayUrl = `${gateway.url}/v1/tools?limit=20`;
    await load(gatewayUrl, {
      headers: { 'x-api-key': freeKey },
      seconds: 1,
      connections: CONNECTIONS,
      warmupSeconds: 0,
    });
    const cpuBefore = await processCpuMicros(gateway.child.pid!);
    const callsBefore = redisCalls(await client.info('commandstats'));
    const proxied = await load(gatewayUrl, {
      headers: { 'x-api-key': freeKey },
      seconds: SECONDS,
      connections: CONNECTIONS,
      warmupSeconds: 0,
    });
    const callsAfter = redisCalls(await client.info('commandstats'));
    const cpuAfter = await processCpuMicros(gateway.child.pid!);

    for (let i = 0; i < 10; i++) {
      await fetch(`${gateway.url}/v1/categories`, { headers: { 'x-api-key': exhaustedKey } });
    }
    const exhaustedBefore = redisCalls(await client.info('commandstats'));
    const limited = await load(`${gateway.url}/v1/categories`, {
      headers: { 'x-api-key': exhaustedKey },
      seconds: 2,
      connections: CONNECTIONS,
      warmupSeconds: 0,
    });
    const exhaustedAfter = redisCalls(await client.info('commandstats'));

    const figures = {
      gatewayVsDirect: ratio(proxied.requestsPerSecond, direct.requestsPerSecond),
      gatewayCpuMicrosPerRequest: Math.round((cpuAfter - cpuBefore) / proxied.requests),
      redisCommandsSentPerAdmittedRequest: perRequest(
        callsAfter.sent - callsBefore.sent,
        proxied.requests,
      ),
      redisCommandsExecutedPerAdmittedRequest: perRequest(
        callsAfter.executed - callsBefore.executed,
        proxied.requests,
      ),
      redisCommandsPerExhaustedRequest: perRequest(
        exhaustedAfter.executed - exhaustedBefore.executed,
        limited.requests,
      ),
      exhaustedRequests: limited.requests,
    };
    console.log(`\nGateway (${label}), Redis ${redis.url}`);
    table({ 'direct catalog': direct, gateway: proxied, 'exhausted key (429)': limited });
    console.log(figures);
    return { direct, proxied, limited, figures };
  } finally {
    client.disconnect();
    await Promise.all([gateway.stop(), catalog.stop()]);
    await redis.stop();
  }
}

async function main(): Promise<void> {
  const catalog = await catalogBench();
  const gateway = await gatewayBench('defaults: tracing off', {});
  const traced = await gatewayBench('tracing on, exporting OTLP to a local sink', {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await startSink()}`,
  });
  const overhead = {
    tracingThroughputRatio: ratio(
      traced.proxied.requestsPerSecond,
      gateway.proxied.requestsPerSecond,
    ),
    tracingCpuMicrosPerRequest:
      traced.figures.gatewayCpuMicrosPerRequest - gateway.figures.gatewayCpuMicrosPerRequest,
  };
  console.log('\nTracing overhead on the gateway:', overhead);
  const out = path.join(__dirname, 'results');
  mkdirSync(out, { recursive: true });
  const file = path.join(out, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      { seconds: SECONDS, connections: CONNECTIONS, catalog, gateway, traced, overhead },
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
