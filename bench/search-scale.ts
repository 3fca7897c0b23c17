import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { PerformanceObserver, monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildCatalogApp } from '../services/catalog/src/app';
import { loadDatasetMeta, loadTools } from '../services/catalog/src/records/dataset';
import { formatInstant } from '../services/catalog/src/records/date-time';
import type { Tool } from '../services/catalog/src/schemas/tool';
import { CatalogSnapshot } from '../services/catalog/src/store/catalog-snapshot';
import { stamped } from '../services/catalog/src/store/change-clock';
import { EmbeddedStore } from '../services/catalog/src/store/embedded-store';
import { loadSearchFixtures } from '../test/catalog/store/search/search-relevance';
import { tempDataDir } from '../test/support/services';
import { cpuLayout, pin } from './cpu-layout';
import type { SearchLoadRequest, SearchLoadTally } from './search-bench';
import { syntheticCatalog } from './synthetic-catalog';

/**
 * The search scale figures (docs/api.md#search), in a process of their own started with
 * `--expose-gc` (bench/search-bench.ts): search CPU per query at 10,000 tools against 165, the
 * embedded store's memory and rebuild time at 10,000, and the longest event-loop pause while
 * an operator import lands under search load (this process serving the catalog, the parent
 * sending the searches over HTTP). Sends its figures to the parent over IPC.
 */

const SMALL = 165;
const LARGE = 10_000;
/** Changed tools in the operator import. */
const IMPORTED = 1_000;
/** The windows that pauses are compared over. */
const WINDOW_MS = 3_000;
const ROUNDS = Number(process.env.BENCH_SEARCH_ROUNDS ?? 5);
/** CPU time per measured block. */
const BLOCK_MICROS = 400_000;

const fixtures = loadSearchFixtures();
const INTERNAL_TOKEN = 'search-bench-internal-token-0000';
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

/**
 * Heap taken by 10,000 tools: their records, then the snapshot (index and orders) on top, then
 * the spare search index the embedded store keeps to take in changes (catalog-snapshot.ts).
 */
async function memory(real: Tool[]) {
  const before = heapMb();
  const tools = syntheticCatalog(real, LARGE);
  const withRecords = heapMb();
  const snapshot = CatalogSnapshot.build(tools, 1);
  const withSnapshot = heapMb();
  const spare = await snapshot.spareIndex();
  const withSpare = heapMb();
  const round = (mb: number) => Math.round(mb * 10) / 10;
  // Kept alive until measured.
  if (snapshot.allByName().length !== LARGE || !spare) throw new Error('snapshot incomplete');
  return {
    recordsMb: round(withRecords - before),
    snapshotMb: round(withSnapshot - withRecords),
    spareIndexMb: round(withSpare - withSnapshot),
    totalMb: round(withSpare - before),
  };
}

/**
 * Event-loop pauses (ms) while `work` runs: the longest and the 99th percentile; and the longest
 * garbage collection pause, one cause of them.
 */
async function pausesDuring<T>(work: () => Promise<T>) {
  // Sampled every millisecond: a pause is how late the sampling timer fired.
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  let longestGcMs = 0;
  const collections = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) longestGcMs = Math.max(longestGcMs, entry.duration);
  });
  collections.observe({ entryTypes: ['gc'] });
  const started = process.hrtime.bigint();
  histogram.enable();
  const result = await work();
  histogram.disable();
  const windowMs = ms(process.hrtime.bigint() - started);
  // Collections are reported a turn late.
  await sleep(10);
  collections.disconnect();
  return {
    result,
    maxPauseMs: ms(histogram.max),
    p99PauseMs: ms(histogram.percentile(99)),
    longestGcMs: Math.round(longestGcMs * 100) / 100,
    windowMs,
  };
}

/**
 * A whole snapshot built anew: in one go (at start) and a slice at a time (when the outbox
 * misses entries); changes are taken in without it (importUnderLoad).
 */
async function rebuildTimes(tools: Tool[]) {
  const start = process.hrtime.bigint();
  CatalogSnapshot.build(tools, 1);
  const inOneGo = ms(process.hrtime.bigint() - start);
  gc();
  const idle = await pausesDuring(() => sleep(1_000));
  const sliced = await pausesDuring(() => CatalogSnapshot.buildInSlices(tools, 1));
  return {
    inOneGoMs: inOneGo,
    inSlicesMs: sliced.windowMs,
    inSlicesMaxPauseMs: sliced.maxPauseMs,
    idleMaxPauseMs: idle.maxPauseMs,
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

/** A file of `IMPORTED` tools of the catalog with a changed description. */
function importFile(dataDir: string, tools: Tool[], change: string): string {
  const file = path.join(dataDir, `import-${change.replace(/\W/g, '')}.json`);
  const changed = tools
    .slice(SMALL, SMALL + IMPORTED)
    .map((tool) => ({ ...tool, description: `${tool.description.slice(0, 250)} ${change}` }));
  writeFileSync(file, JSON.stringify(changed));
  return file;
}

/** The catalog service on the store, as deployed, with the longest request it has served. */
async function catalogServer(store: EmbeddedStore) {
  const app = await buildCatalogApp({
    store,
    meta: loadDatasetMeta(),
    internalToken: INTERNAL_TOKEN,
    logger: false,
  });
  // A request runs without a break from its handler to its answer (the store's search is
  // synchronous): the longest is the shortest pause that load alone can cause.
  let longestRequestMs = 0;
  const began = new WeakMap<object, bigint>();
  app.addHook('preHandler', async (request) => void began.set(request, process.hrtime.bigint()));
  app.addHook('onSend', async (request) => {
    const start = began.get(request);
    if (start) longestRequestMs = Math.max(longestRequestMs, ms(process.hrtime.bigint() - start));
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    port: (app.server.address() as { port: number }).port,
    /** The longest request since the last call. */
    takeLongestRequestMs: () => {
      const longest = longestRequestMs;
      longestRequestMs = 0;
      return longest;
    },
    close: () => app.close(),
  };
}

/** Asks search-bench.ts (the parent) to start or stop its search load on this server. */
function askParent(message: SearchLoadRequest) {
  return new Promise<SearchLoadTally | undefined>((resolve) => {
    process.once('message', (reply: { tally?: SearchLoadTally }) => resolve(reply.tally));
    process.send!(message);
  });
}

/**
 * An operator imports `IMPORTED` changed tools into a 10,000-tool catalog with the catalog CLI
 * (its own process, on other CPUs); when the CLI is done, the store catches up, as the change
 * feed's announcement makes it. Measured inside this process, the catalog service, while
 * search-bench.ts sends it searches over HTTP: the longest event-loop pause from the CLI's
 * exit until the catalog is done with the change (served, and any work left after it), next to
 * the longest in a window as long right after, under the same load without an import. A search
 * of 10,000 tools is itself a pause of its length (the slowest take tens of milliseconds), so
 * the longest request is reported too. The same import without load comes first: the pauses
 * of the catalog's own work, against those of an idle process.
 */
async function importUnderLoad(tools: Tool[]) {
  const dataDir = tempDataDir();
  const store = new EmbeddedStore(dataDir, tools);
  // Whatever the store does once started is done before anything is measured.
  await store.refresh();
  const server = await catalogServer(store);

  const takeIn = async (file: string, windowMs: number) => {
    const { version } = await importWithCli(dataDir, file);
    server.takeLongestRequestMs();
    let servedAfterMs = 0;
    let cpuShare = 0;
    const pauses = await pausesDuring(async () => {
      const exited = process.hrtime.bigint();
      const cpu = process.cpuUsage();
      while (store.version < version) await store.refresh();
      servedAfterMs = ms(process.hrtime.bigint() - exited);
      cpuShare = cpuMicros(cpu) / 1e3 / servedAfterMs;
      // Work the store goes on with after serving the change.
      await store.refresh();
      const left = windowMs - ms(process.hrtime.bigint() - exited);
      if (left > 0) await sleep(left);
    });
    return {
      ...pauses,
      servedAfterMs,
      cpuShare: Math.round(cpuShare * 100) / 100,
      longestRequestMs: server.takeLongestRequestMs(),
    };
  };

  gc();
  const idle = await pausesDuring(() => sleep(WINDOW_MS));
  const alone = await takeIn(importFile(dataDir, tools, 'Now faster.'), 0);

  await askParent({ load: 'start', port: server.port, token: INTERNAL_TOKEN });
  await sleep(500);
  gc();
  const busy = await takeIn(importFile(dataDir, tools, 'Now cheaper.'), WINDOW_MS);
  // The same load for as long, without an import, from a heap as clean.
  gc();
  server.takeLongestRequestMs();
  const quiet = await pausesDuring(() => sleep(busy.windowMs));
  const longestRequestMs = server.takeLongestRequestMs();
  const tally = await askParent({ load: 'stop' });

  await server.close();
  await store.close();
  return {
    importedTools: IMPORTED,
    alone: {
      servedAfterMs: alone.servedAfterMs,
      cpuShare: alone.cpuShare,
      maxPauseMs: alone.maxPauseMs,
      longestGcMs: alone.longestGcMs,
      idleMaxPauseMs: idle.maxPauseMs,
    },
    underLoad: {
      servedAfterMs: busy.servedAfterMs,
      cpuShare: busy.cpuShare,
      maxPauseMs: busy.maxPauseMs,
      p99PauseMs: busy.p99PauseMs,
      windowMs: Math.round(busy.windowMs),
      longestRequestMs: busy.longestRequestMs,
      longestGcMs: busy.longestGcMs,
      baselineMaxPauseMs: quiet.maxPauseMs,
      baselineP99PauseMs: quiet.p99PauseMs,
      baselineWindowMs: Math.round(quiet.windowMs),
      baselineLongestGcMs: quiet.longestGcMs,
      baselineLongestRequestMs: longestRequestMs,
      ...tally!,
    },
  };
}

async function main(): Promise<void> {
  // As a store serves them: each with its instant on the change clock.
  const real = loadTools().map((tool, i) => stamped(tool, formatInstant(i)));
  const large = syntheticCatalog(real, LARGE);
  // First, with nothing else built yet on the heap.
  const heap = await memory(real);
  const cpu = cpuPerQuery(CatalogSnapshot.build(real, 1), CatalogSnapshot.build(large, 1));
  const figures = {
    cpu,
    memory: heap,
    rebuild: await rebuildTimes(large),
    import: await importUnderLoad(large),
  };
  process.send!({ figures });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
