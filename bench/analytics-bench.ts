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
import { pin } from './cpu-layout';
import { CONNECTIONS, REPEATS, SECONDS, layout, measureRepeatedly, ratio, report } from './measure';

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
    for (const service of [catalog, gateways.on, gateways.off]) {
      service.child.stdout?.removeAllListeners('data').resume();
      if (layout) pin(service.child.pid!, layout.others);
    }
    const key = await createKey('enterprise', { DATA_DIR: dataDir });

    // REST: the gateway bench's method (the measured server alone on its CPU, slices in rounds).
    const rest = (mode: 'on' | 'off') => ({
      pid: gateways[mode].child.pid!,
      url: `${gateways[mode].url}${SEARCH}`,
      headers: { 'x-api-key': key },
      alongside: { catalog: catalog.child.pid! },
    });
    const measured = await measureRepeatedly({
      'REST /v1/search, analytics on': rest('on'),
      'REST /v1/search, analytics off': rest('off'),
    });
    report(
      'Search analytics: REST /v1/search through a gateway with SEARCH_ANALYTICS on and one with it off, both from the response cache',
      measured.results,
    );

    // MCP: a POST, so autocannon's runs, alternated, each gateway on the measured CPU in turn.
    const mcp: Way = {
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
    };
    const modes = ['on', 'off'] as const;
    const measure = (mode: 'on' | 'off', seconds: number) => run(gateways[mode], mcp, seconds);
    for (const mode of modes) await measure(mode, 2);
    const runs: Record<'on' | 'off', Run[]> = { on: [], off: [] };
    for (let repeat = 0; repeat < REPEATS; repeat++) {
      for (const mode of modes) runs[mode].push(await measure(mode, SECONDS));
    }
    const mcpResults = { on: median(runs.on), off: median(runs.off) };
    console.log(
      `\nSearch analytics: MCP search_tools, SEARCH_ANALYTICS on and off; median of ${REPEATS} alternated runs of ${SECONDS} s, ${CONNECTIONS} connections`,
    );
    console.table(mcpResults);
    const restCpu = (name: keyof typeof measured.results) =>
      measured.results[name].cpuMicrosPerRequest;
    const ratios = {
      restOnVsOff: ratio(
        restCpu('REST /v1/search, analytics on'),
        restCpu('REST /v1/search, analytics off'),
      ),
      mcpOnVsOff: ratio(mcpResults.on.cpuMicrosPerRequest, mcpResults.off.cpuMicrosPerRequest),
    };
    console.log(
      `ratio REST search, analytics on : off, gateway CPU/req = ${ratios.restOnVsOff} (goal ≤ 1.05)`,
    );
    console.log(
      `ratio MCP search_tools, analytics on : off, gateway CPU/req = ${ratios.mcpOnVsOff} (goal ≤ 1.05)`,
    );
    for (const [name, result] of Object.entries(mcpResults)) {
      if (result.non2xx > 0) throw new Error(`MCP ${name}: ${result.non2xx} answers were not 2xx`);
    }
    const results = { ...measured.results, mcp: mcpResults };
    return { results, runs: { rest: measured.runs, mcp: runs }, ratios, flood };
  } finally {
    await started.stopAll();
  }
}
