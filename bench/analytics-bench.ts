import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { SearchRecorder } from '../services/gateway/src/analytics/search-recorder';
import { RedisServer } from '../test/support/redis-server';
import { ServiceProcess, tempDataDir } from '../test/support/services';
import { Started, createKey } from './bench-services';
import {
  MODERN,
  type Run,
  SEARCH,
  SEARCH_ARGUMENTS,
  type Way,
  median,
  message,
  run,
} from './mcp-bench';
import { CONNECTIONS, REPEATS, SECONDS, ratio } from './measure';

/**
 * What search analytics cost a search: the same REST `/v1/search` and MCP `search_tools` call
 * through two gateways of one stack (one catalog, one Redis, one DATA_DIR), one with
 * SEARCH_ANALYTICS=on, one off, both answering from their response cache after the warm-up, so
 * the difference is the counting alone. The catalog does no analytics work (the gateway counts,
 * cache hits never reach the catalog). Runs alternate, REPEATS of each; goal: on ÷ off ≤ 1.05.
 */
/** The heap a garbage collection leaves, in MB. */
function heapAfterCollection(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed / 1e6;
}

/**
 * A flood of a million distinct queries from one key between two writes: the recorder's heap
 * after the first full batch (10,000 tallies) and after the million, over an empty recorder.
 */
function floodMemory() {
  const recorder = new SearchRecorder({
    store: {
      add: async () => {},
      prune: async () => {},
      ofKey: async () => ({ top: [], noHit: [], totals: { searches: 0, noHits: 0 } }),
      gaps: async () => [],
    },
    flushMs: 60_000,
    logger: { warn: () => {} },
  });
  const record = (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      recorder.record('key_0123456789abcdef', `distinct query number ${i} with words`, i % 2);
    }
  };
  const empty = heapAfterCollection();
  record(0, 10_000);
  const batchMb = heapAfterCollection() - empty;
  record(10_000, 1_000_000);
  const millionMb = heapAfterCollection() - empty;
  return { batchMb: Math.round(batchMb * 10) / 10, millionMb: Math.round(millionMb * 10) / 10 };
}

export async function analyticsBench() {
  const flood = floodMemory();
  console.log(
    `\nSearch analytics under a flood of 1,000,000 distinct queries: ${flood.batchMb} MB after the first 10,000, ${flood.millionMb} MB after the million (bounded: ratio ${ratio(flood.millionMb, flood.batchMb)}, goal ≤ 1.1)`,
  );
  const started = new Started();
  try {
    const redis = started.add(await RedisServer.start(), (r) => r.stop());
    const dataDir = tempDataDir();
    const catalog = started.add(
      await ServiceProcess.start('catalog', { DATA_DIR: tempDataDir() }),
      (s) => s.stop(),
    );
    const gateway = async (analytics: 'on' | 'off') =>
      started.add(
        await ServiceProcess.start('gateway', {
          CATALOG_URL: catalog.url,
          DATA_DIR: dataDir,
          REDIS_URL: redis.url,
          LOG_LEVEL: 'warn',
          QUOTA_ENTERPRISE: String(1e9),
          SEARCH_ANALYTICS: analytics,
        }),
        (s) => s.stop(),
      );
    const gateways = { on: await gateway('on'), off: await gateway('off') };
    const key = await createKey('enterprise', { DATA_DIR: dataDir });
    const ways: Record<string, Way> = {
      'REST /v1/search': { path: SEARCH, method: 'GET', headers: { 'x-api-key': key } },
      'MCP search_tools': {
        path: '/v1/mcp',
        method: 'POST',
        headers: {
          'x-api-key': key,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': MODERN,
          'mcp-method': 'tools/call',
          'mcp-name': 'search_tools',
        },
        body: message('tools/call', SEARCH_ARGUMENTS, 'modern'),
      },
    };
    const targets = Object.entries(ways).flatMap(([name, way]) =>
      (['on', 'off'] as const).map((mode) => ({ name: `${name}, analytics ${mode}`, way, mode })),
    );
    for (const { way, mode } of targets) await run(gateways[mode], way, 2);
    const runs: Record<string, Run[]> = Object.fromEntries(targets.map((t) => [t.name, []]));
    for (let repeat = 0; repeat < REPEATS; repeat++) {
      for (const { name, way, mode } of targets) {
        runs[name]!.push(await run(gateways[mode], way, SECONDS));
      }
    }
    const results = Object.fromEntries(targets.map((t) => [t.name, median(runs[t.name]!)]));
    console.log(
      `\nSearch analytics: the same search through a gateway with SEARCH_ANALYTICS on and one with it off, both from the response cache; median of ${REPEATS} alternated runs of ${SECONDS} s, ${CONNECTIONS} connections`,
    );
    console.table(results);
    const cpu = (name: string) => results[name]!.cpuMicrosPerRequest;
    const ratios = {
      restOnVsOff: ratio(
        cpu('REST /v1/search, analytics on'),
        cpu('REST /v1/search, analytics off'),
      ),
      mcpOnVsOff: ratio(
        cpu('MCP search_tools, analytics on'),
        cpu('MCP search_tools, analytics off'),
      ),
    };
    console.log(
      `ratio REST search, analytics on : off, gateway CPU/req = ${ratios.restOnVsOff} (goal ≤ 1.05)`,
    );
    console.log(
      `ratio MCP search_tools, analytics on : off, gateway CPU/req = ${ratios.mcpOnVsOff} (goal ≤ 1.05)`,
    );
    for (const [name, result] of Object.entries(results)) {
      if (result.non2xx > 0) throw new Error(`${name}: ${result.non2xx} answers were not 2xx`);
    }
    return { results, runs, ratios, flood };
  } finally {
    await started.stopAll();
  }
}
