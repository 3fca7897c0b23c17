import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { loadTools } from '../services/catalog/src/dataset';
import type { Tool } from '../services/catalog/src/schemas/tool';
import { CatalogSnapshot } from '../services/catalog/src/store/catalog-snapshot';
import { EmbeddedStore } from '../services/catalog/src/store/embedded-store';
import { loadSearchFixtures } from '../test/catalog/search-relevance';
import { tempDataDir } from '../test/support/services';
import { cpuLayout, pin } from './cpu-layout';
import { syntheticCatalog } from './synthetic-catalog';

/**
 * The search scale figures (SPEC B11, issue item 4), in a process of their own started with
 * `--expose-gc` (bench/search-bench.ts): search CPU per query at 10,000 tools against 165, the
 * embedded store's memory and rebuild time at 10,000, and the longest event-loop pause while
 * an operator import lands under search load. Sends its figures to the parent over IPC.
 */

const SMALL = 165;
const LARGE = 10_000;
/** Changed tools in the operator import. */
const IMPORTED = 1_000;
const ROUNDS = Number(process.env.BENCH_SEARCH_ROUNDS ?? 5);
/** CPU time per measured block. */
const BLOCK_MICROS = 400_000;

const fixtures = loadSearchFixtures();
/** This process on a CPU of its own (search-bench.ts pins it), the import CLI on the others. */
const layout = cpuLayout();
const gc = (globalThis as { gc?: () => void }).gc!;
const ms = (nanoseconds: number | bigint) => Math.round(Number(nanoseconds) / 1e4) / 100;
const cpuMicros = (since: NodeJS.CpuUsage) => {
  const { user, system } = process.cpuUsage(since);
  return user + system;
};

/** Runs the fixture queries until `BLOCK_MICROS` of CPU time: CPU µs per query. */
function searchBlock(snapshot: CatalogSnapshot): number {
  const start = process.cpuUsage();
  let queries = 0;
  while (cpuMicros(start) < BLOCK_MICROS) {
    for (const { q, category } of fixtures) snapshot.search({ text: q, limit: 10, category });
    queries += fixtures.length;
  }
  return cpuMicros(start) / queries;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/**
 * CPU per query at both sizes, measured in alternating blocks so that the machine's slow
 * spells hit both: the median of the per-round ratios.
 */
function cpuPerQuery(small: CatalogSnapshot, large: CatalogSnapshot) {
  searchBlock(small);
  searchBlock(large);
  const rounds = Array.from({ length: ROUNDS }, () => {
    const atSmall = searchBlock(small);
    const atLarge = searchBlock(large);
    return { atSmall, atLarge, ratio: atLarge / atSmall };
  });
  return {
    microsPerQueryAt165: Math.round(median(rounds.map((r) => r.atSmall))),
    microsPerQueryAt10000: Math.round(median(rounds.map((r) => r.atLarge))),
    ratio: Math.round(median(rounds.map((r) => r.ratio)) * 10) / 10,
    queries: fixtures.length,
  };
}

function heapMb(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** Heap taken by 10,000 tools: their records, then the snapshot (index and orders) on top. */
function memory(real: Tool[]) {
  const before = heapMb();
  const tools = syntheticCatalog(real, LARGE);
  const withRecords = heapMb();
  const snapshot = CatalogSnapshot.build(tools, 1);
  const withSnapshot = heapMb();
  const round = (mb: number) => Math.round(mb * 10) / 10;
  // Kept alive until measured.
  if (snapshot.allByName().length !== LARGE) throw new Error('snapshot incomplete');
  return {
    recordsMb: round(withRecords - before),
    snapshotMb: round(withSnapshot - withRecords),
    totalMb: round(withSnapshot - before),
  };
}

/** The longest event-loop pause (ms) while `work` runs, and the 99th percentile. */
async function longestPause<T>(
  work: () => Promise<T>,
): Promise<{ result: T; maxPauseMs: number; p99PauseMs: number }> {
  // Sampled every millisecond.
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const result = await work();
  histogram.disable();
  return { result, maxPauseMs: ms(histogram.max), p99PauseMs: ms(histogram.percentile(99)) };
}

async function rebuildTimes(tools: Tool[]) {
  const start = process.hrtime.bigint();
  CatalogSnapshot.build(tools, 1);
  const inOneGo = ms(process.hrtime.bigint() - start);
  const sliced = process.hrtime.bigint();
  const { maxPauseMs } = await longestPause(() => CatalogSnapshot.buildInSlices(tools, 1));
  return {
    inOneGoMs: inOneGo,
    inSlicesMs: ms(process.hrtime.bigint() - sliced),
    inSlicesMaxPauseMs: maxPauseMs,
  };
}

/** `npm run catalog -- import <file>` against the store's DATA_DIR: the operator's path. */
function importWithCli(dataDir: string, file: string): Promise<{ version: number }> {
  const cli = path.join(__dirname, '..', 'dist', 'scripts', 'catalog.js');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, 'import', file], {
      env: { ...process.env, DATA_DIR: dataDir, REDIS_URL: '', MONGODB_URI: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk));
    child.on('error', reject);
    if (layout) pin(child.pid!, layout.others);
    child.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as { version: number })
        : reject(new Error(`import exited ${code}: ${(err || out).slice(0, 500)}`)),
    );
  });
}

/**
 * An operator imports 1,000 changed tools into a 10,000-tool catalog with the catalog CLI (its
 * own process, on other CPUs) while this process searches without pause; when the CLI is done,
 * the store catches up, as the change feed's announcement makes it: the longest event-loop
 * pause from then until the change is served, against the longest under the same load without
 * an import. A single search of 10,000 tools is itself a pause of its length (the slowest, a
 * few words matching most of the catalog, take tens of milliseconds).
 */
async function importUnderLoad(tools: Tool[]) {
  const dataDir = tempDataDir();
  const store = new EmbeddedStore(dataDir, tools);
  const file = path.join(dataDir, 'import.json');
  const changed = tools
    .slice(SMALL, SMALL + IMPORTED)
    .map((tool) => ({ ...tool, description: `${tool.description.slice(0, 250)} Now faster.` }));
  writeFileSync(file, JSON.stringify(changed));
  // The seeding's garbage goes now, not in a measured window.
  gc();

  let loaded = true;
  const load = (async () => {
    for (let i = 0; loaded; i++) {
      const { q, category } = fixtures[i % fixtures.length]!;
      await store.search({ text: q, limit: 10, category });
      await nextTurn();
    }
  })();
  const quiet = await longestPause(() => sleep(3_000));
  const { version } = await importWithCli(dataDir, file);
  const started = process.hrtime.bigint();
  const busy = await longestPause(async () => {
    while (store.version < version) await store.refresh();
  });
  const servedAfterMs = ms(process.hrtime.bigint() - started);
  loaded = false;
  await load;
  await store.close();
  return {
    importedTools: IMPORTED,
    maxPauseUnderLoadMs: quiet.maxPauseMs,
    p99PauseUnderLoadMs: quiet.p99PauseMs,
    maxPauseTakingInImportMs: busy.maxPauseMs,
    p99PauseTakingInImportMs: busy.p99PauseMs,
    importServedAfterMs: servedAfterMs,
  };
}

async function main(): Promise<void> {
  const real = loadTools();
  const large = syntheticCatalog(real, LARGE);
  const cpu = cpuPerQuery(CatalogSnapshot.build(real, 1), CatalogSnapshot.build(large, 1));
  const figures = {
    cpu,
    memory: memory(real),
    rebuild: await rebuildTimes(large),
    import: await importUnderLoad(large),
  };
  process.send!(figures);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
