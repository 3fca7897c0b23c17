import autocannon from 'autocannon';
import { setTimeout } from 'node:timers/promises';
import { RedisServer } from '../test/support/redis-server';
import { ServiceProcess, tempDataDir } from '../test/support/services';
import { Started, createKey, redisPidOf } from './bench-services';
import { processCpuMicros } from './load';
import { pin } from './cpu-layout';
import {
  CONNECTIONS,
  REPEATS,
  SECONDS,
  SLICES,
  SLICE_SECONDS,
  WARMUP_SECONDS,
  layout,
  ratio,
} from './measure';

/**
 * The MCP endpoint's cost against REST's for the same read: a `search_tools` call
 * (`POST /v1/mcp`, a JSON-RPC `tools/call`, in either protocol era) and `GET /v1/search` with
 * the same query, through one gateway with Redis, one Enterprise key, both answered from the
 * gateway's response cache after the warm-up: what is left is what each way of asking costs the
 * gateway. And `tools/list` (2026-07-28) against the same REST cache hit. The gateway is alone on
 * the measured CPU during each slice; REPEATS repeats of SECONDS per way, each in alternated
 * slices; the gateway's CPU per request is the median repeat. Goals: a `search_tools` call ≤ 1.5 ×
 * the REST search, `tools/list` ≤ 1.0 × it.
 */

const QUERY = 'vector database';
export const SEARCH = `/v1/search?q=${encodeURIComponent(QUERY)}&limit=10`;
export const MODERN = '2026-07-28';

/** The `_meta` envelope a 2026-07-28 client sends with every request. */
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
export const SEARCH_ARGUMENTS = { name: 'search_tools', arguments: { q: QUERY, limit: 10 } };

/** A JSON-RPC request as a client of `era` sends it. */
export function message(method: string, params: Record<string, unknown>, era: 'legacy' | 'modern') {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method,
    params: era === 'modern' ? { ...params, _meta: ENVELOPE } : params,
  });
}

export interface Way {
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

export interface Run {
  requests: number;
  non2xx: number;
  cpuMicros: number;
  cpuMicrosPerRequest: number;
}

const perRequest = (cpuMicros: number, requests: number) =>
  Math.round((cpuMicros / requests) * 10) / 10;

/**
 * One run of `way`'s load against the gateway, with the gateway alone on the measured CPU (the
 * gateway bench's layout, bench/cpu-layout.ts) and back with the others after it: the load
 * generator, the catalog and Redis then never share its CPU, whose time per request is read.
 */
export async function run(gateway: ServiceProcess, way: Way, seconds: number): Promise<Run> {
  const pid = gateway.child.pid!;
  if (layout) pin(pid, layout.measured);
  try {
    return await runOnce(gateway, way, seconds);
  } finally {
    if (layout) pin(pid, layout.others);
  }
}

async function runOnce(gateway: ServiceProcess, way: Way, seconds: number): Promise<Run> {
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
    cpuMicros,
    cpuMicrosPerRequest: perRequest(cpuMicros, result.requests.total),
  };
}

/**
 * One repeat of every way, as the other sections measure (measure.ts, `measureRepeatedly`):
 * SLICES rounds of a slice of each way, each way's slices summed. A slow spell of a shared host
 * lasts seconds to minutes; in slices it lands on every way of the repeat alike, where in one
 * block per way it could land on one of the two a ratio compares.
 */
async function repeatInSlices<Name extends string>(
  gateway: ServiceProcess,
  ways: Record<Name, Way>,
): Promise<Record<Name, Run>> {
  const names = Object.keys(ways) as Name[];
  const sums = Object.fromEntries(
    names.map((name) => [name, { requests: 0, non2xx: 0, cpuMicros: 0 }]),
  ) as Record<Name, Omit<Run, 'cpuMicrosPerRequest'>>;
  for (let round = 0; round < SLICES; round++) {
    for (const name of names) {
      const slice = await run(gateway, ways[name], SLICE_SECONDS);
      sums[name].requests += slice.requests;
      sums[name].non2xx += slice.non2xx;
      sums[name].cpuMicros += slice.cpuMicros;
    }
  }
  return Object.fromEntries(
    names.map((name) => [
      name,
      { ...sums[name], cpuMicrosPerRequest: perRequest(sums[name].cpuMicros, sums[name].requests) },
    ]),
  ) as Record<Name, Run>;
}

export const median = (runs: Run[]) =>
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
    if (layout) {
      for (const service of [catalog, gateway]) pin(service.child.pid!, layout.others);
      const client = started.add(redis.client(), (c) => c.disconnect());
      pin(await redisPidOf(client), layout.others);
    }
    const key = await createKey('enterprise', { DATA_DIR: dataDir });
    const mcp = (method: string, body: string, modern: boolean, name?: string): Way => ({
      path: '/v1/mcp',
      method: 'POST',
      headers: {
        'x-api-key': key,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(modern && {
          'mcp-protocol-version': MODERN,
          'mcp-method': method,
          ...(name !== undefined && { 'mcp-name': name }),
        }),
      },
      body,
    });
    const ways = {
      'REST /v1/search': { path: SEARCH, method: 'GET', headers: { 'x-api-key': key } } as Way,
      'MCP search_tools, 2026-07-28': mcp(
        'tools/call',
        message('tools/call', SEARCH_ARGUMENTS, 'modern'),
        true,
        'search_tools',
      ),
      'MCP search_tools, 2025-11-25': mcp(
        'tools/call',
        message('tools/call', SEARCH_ARGUMENTS, 'legacy'),
        false,
      ),
      'MCP tools/list, 2026-07-28': mcp('tools/list', message('tools/list', {}, 'modern'), true),
    };
    const names = Object.keys(ways) as (keyof typeof ways)[];
    for (const name of names) await run(gateway, ways[name], WARMUP_SECONDS);
    const runs = Object.fromEntries(names.map((name) => [name, [] as Run[]])) as Record<
      keyof typeof ways,
      Run[]
    >;
    for (let repeat = 0; repeat < REPEATS; repeat++) {
      const repeated = await repeatInSlices(gateway, ways);
      for (const name of names) runs[name].push(repeated[name]);
    }
    const results = Object.fromEntries(names.map((name) => [name, median(runs[name])])) as Record<
      keyof typeof ways,
      Run
    >;
    console.log(
      `\nMCP: a search_tools call against GET /v1/search, same query, one gateway with Redis, both from its response cache; median of ${REPEATS} repeats of ${SECONDS} s each in ${SLICES} alternated slices, ${CONNECTIONS} connections, ${layout ? `the gateway alone on CPU ${layout.measured}` : 'nothing pinned'}`,
    );
    console.table(results);
    const rest = results['REST /v1/search'].cpuMicrosPerRequest;
    const ratios = {
      searchModernVsRest: ratio(results['MCP search_tools, 2026-07-28'].cpuMicrosPerRequest, rest),
      searchLegacyVsRest: ratio(results['MCP search_tools, 2025-11-25'].cpuMicrosPerRequest, rest),
      toolsListVsRestHit: ratio(results['MCP tools/list, 2026-07-28'].cpuMicrosPerRequest, rest),
    };
    console.log(
      `ratio MCP search_tools (2026-07-28) : REST /v1/search gateway CPU/req = ${ratios.searchModernVsRest} (goal ≤ 1.5)`,
    );
    console.log(
      `ratio MCP search_tools (2025-11-25) : REST /v1/search gateway CPU/req = ${ratios.searchLegacyVsRest} (goal ≤ 1.5)`,
    );
    console.log(
      `ratio MCP tools/list (2026-07-28) : REST /v1/search, a cache hit, gateway CPU/req = ${ratios.toolsListVsRestHit} (goal ≤ 1.0)`,
    );
    for (const [name, result] of Object.entries(results)) {
      if (result.non2xx > 0) throw new Error(`${name}: ${result.non2xx} answers were not 2xx`);
    }
    return { results, runs, ratios };
  } finally {
    await started.stopAll();
  }
}
