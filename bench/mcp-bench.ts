import autocannon from 'autocannon';
import { setTimeout } from 'node:timers/promises';
import { RedisServer } from '../test/support/redis-server';
import { ServiceProcess, tempDataDir } from '../test/support/services';
import { Started, createKey } from './bench-services';
import { processCpuMicros } from './load';
import { CONNECTIONS, REPEATS, SECONDS, ratio } from './measure';

/**
 * The MCP endpoint's cost against REST's for the same read: a `search_tools` call
 * (`POST /v1/mcp`, a JSON-RPC `tools/call`) and `GET /v1/search` with the same query, through
 * one gateway with Redis, one Enterprise key, both answered from the gateway's response cache
 * after the warm-up: what is left is what each way of asking costs the gateway. Runs alternate,
 * REPEATS of each, SECONDS long; the gateway's CPU per request is the median. The ratio is
 * information (no goal): an MCP call parses a JSON-RPC body, builds the SDK's server and
 * transport, checks the arguments and writes the record twice (structured and as text).
 */

const QUERY = 'vector database';
const SEARCH = `/v1/search?q=${encodeURIComponent(QUERY)}&limit=10`;
const MCP_CALL = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'search_tools', arguments: { q: QUERY, limit: 10 } },
});

interface Way {
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

interface Run {
  requests: number;
  non2xx: number;
  cpuMicrosPerRequest: number;
}

async function run(gateway: ServiceProcess, way: Way, seconds: number): Promise<Run> {
  const before = await processCpuMicros(gateway.child.pid!);
  const result = await autocannon({
    url: `${gateway.url}${way.path}`,
    method: way.method,
    headers: way.headers,
    ...(way.body !== undefined && { body: way.body }),
    connections: CONNECTIONS,
    duration: seconds,
  });
  const cpuMicros = (await processCpuMicros(gateway.child.pid!)) - before;
  // Requests still in flight when a load stops: let them end before the next run.
  await setTimeout(250);
  return {
    requests: result.requests.total,
    non2xx: result.non2xx,
    cpuMicrosPerRequest: Math.round(cpuMicros / result.requests.total),
  };
}

const median = (runs: Run[]) =>
  [...runs].sort((a, b) => a.cpuMicrosPerRequest - b.cpuMicrosPerRequest)[runs.length >> 1]!;

export async function mcpBench() {
  const started = new Started();
  try {
    const redis = started.add(await RedisServer.start(), (r) => r.stop());
    const dataDir = tempDataDir();
    const catalog = started.add(
      await ServiceProcess.start('catalog', { DATA_DIR: tempDataDir() }),
      (s) => s.stop(),
    );
    const gateway = started.add(
      await ServiceProcess.start('gateway', {
        CATALOG_URL: catalog.url,
        DATA_DIR: dataDir,
        REDIS_URL: redis.url,
        LOG_LEVEL: 'warn',
        QUOTA_ENTERPRISE: String(1e9),
      }),
      (s) => s.stop(),
    );
    const key = await createKey('enterprise', { DATA_DIR: dataDir });
    const ways: Record<'REST /v1/search' | 'MCP search_tools', Way> = {
      'REST /v1/search': { path: SEARCH, method: 'GET', headers: { 'x-api-key': key } },
      'MCP search_tools': {
        path: '/v1/mcp',
        method: 'POST',
        headers: {
          'x-api-key': key,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: MCP_CALL,
      },
    };
    const names = Object.keys(ways) as (keyof typeof ways)[];
    for (const name of names) await run(gateway, ways[name], 2);
    const runs = Object.fromEntries(names.map((name) => [name, [] as Run[]])) as Record<
      keyof typeof ways,
      Run[]
    >;
    for (let repeat = 0; repeat < REPEATS; repeat++) {
      for (const name of names) runs[name].push(await run(gateway, ways[name], SECONDS));
    }
    const results = Object.fromEntries(names.map((name) => [name, median(runs[name])])) as Record<
      keyof typeof ways,
      Run
    >;
    console.log(
      `\nMCP: a search_tools call against GET /v1/search, same query, one gateway with Redis, both from its response cache; median of ${REPEATS} alternated runs of ${SECONDS} s, ${CONNECTIONS} connections`,
    );
    console.table(results);
    const mcpVsRest = ratio(
      results['MCP search_tools'].cpuMicrosPerRequest,
      results['REST /v1/search'].cpuMicrosPerRequest,
    );
    console.log(
      `ratio MCP search_tools : REST /v1/search gateway CPU/req = ${mcpVsRest} (information)`,
    );
    return { results, runs, ratios: { mcpVsRestCpuPerRequest: mcpVsRest } };
  } finally {
    await started.stopAll();
  }
}
