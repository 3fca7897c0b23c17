import { fork } from 'node:child_process';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { Pool } from 'undici';
import { loadDataset } from '../services/catalog/src/records/dataset';
import type { CatalogStore } from '../services/catalog/src/store/catalog-store';
import { EmbeddedStore } from '../services/catalog/src/store/embedded-store';
import { MongoStore } from '../services/catalog/src/store/mongo-store';
import { INTERNAL_HEADERS } from '../services/shared/contract';
import {
  RELEVANCE_GOALS,
  loadSearchFixtures,
  measureRelevance,
} from '../test/catalog/store/search/search-relevance';
import { tempDataDir } from '../test/support/services';
import { cpuLayout, pin } from './cpu-layout';

/**
 * `npm run bench -- search` (and part of `npm run bench`): search relevance per store, with the
 * fixtures of test/catalog/store/search/search-fixtures.json, and the scale figures of
 * search-scale.ts, each printed next to its goal (docs/api.md#search; docs/performance.md).
 */

const GOALS = {
  cpuRatio: 10,
  /** The longest event-loop pause while the catalog takes in an import. */
  maxPauseMs: 50,
  /**
   * From the catalog CLI's exit until the change is served
   * (docs/api.md#catalog-changes-and-freshness).
   */
  servedAfterMs: 1_000,
};

/** Relevance on the embedded store, and on MongoDB (a database of its own) when configured. */
async function relevancePerStore() {
  const { tools } = loadDataset();
  const stores: Record<string, () => Promise<{ store: CatalogStore; done: () => Promise<void> }>> =
    {
      embedded: async () => {
        const store = new EmbeddedStore(tempDataDir(), tools);
        return { store, done: () => store.close() };
      },
    };
  const uri = process.env.MONGODB_URI;
  if (uri) {
    stores.mongodb = async () => {
      const db = `tool_directory_search_bench_${process.pid}`;
      const store = await MongoStore.connect(uri, db);
      await store.seed(tools);
      return {
        store,
        done: async () => {
          await store.close();
          const client = await MongoClient.connect(uri);
          await client.db(db).dropDatabase();
          await client.close();
        },
      };
    };
  } else {
    console.log('Search relevance on MongoDB NOT measured: MONGODB_URI is not set.');
  }
  const results: Record<string, Awaited<ReturnType<typeof measureRelevance>>> = {};
  for (const [name, open] of Object.entries(stores)) {
    const { store, done } = await open();
    try {
      results[name] = await measureRelevance(store);
    } finally {
      await done();
    }
  }
  return results;
}

/** What search-scale.ts asks of its parent while it serves the catalog. */
export type SearchLoadRequest = { load: 'start'; port: number; token: string } | { load: 'stop' };
export interface SearchLoadTally {
  requests: number;
  failed: number;
}

/** Connections sending searches one after another: enough to keep the catalog busy. */
const LOAD_CONNECTIONS = 2;

/**
 * Searches sent to the catalog without pause, the fixture queries in turn, each URL its own
 * (an ignored parameter) so that the response cache never answers. Returns a function that
 * stops the load and tallies it.
 */
function searchLoad(port: number, token: string): () => Promise<SearchLoadTally> {
  const fixtures = loadSearchFixtures();
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: LOAD_CONNECTIONS });
  const tally: SearchLoadTally = { requests: 0, failed: 0 };
  let running = true;
  const connection = async () => {
    while (running) {
      const { q, category } = fixtures[tally.requests % fixtures.length]!;
      const query = new URLSearchParams({ q, limit: '10', n: String(tally.requests) });
      if (category) query.set('category', category);
      tally.requests += 1;
      const { statusCode, body } = await pool.request({
        method: 'GET',
        path: `/v1/search?${query}`,
        headers: { [INTERNAL_HEADERS.token]: token, [INTERNAL_HEADERS.tier]: 'free' },
      });
      await body.dump();
      if (statusCode !== 200) tally.failed += 1;
    }
  };
  const connections = Array.from({ length: LOAD_CONNECTIONS }, connection);
  return async () => {
    running = false;
    await Promise.all(connections);
    await pool.close();
    return tally;
  };
}

/**
 * The scale figures, measured in a process of its own that can force garbage collection,
 * with the search load it asks for.
 */
function scale(): Promise<Record<string, Record<string, number | Record<string, number>>>> {
  const child = fork(path.join(__dirname, 'search-scale.ts'), {
    execArgv: ['--expose-gc', '--import', 'tsx'],
    stdio: 'inherit',
  });
  const layout = cpuLayout();
  if (layout) pin(child.pid!, layout.measured);
  let stopLoad: (() => Promise<SearchLoadTally>) | undefined;
  return new Promise((resolve, reject) => {
    child.on('message', (message: SearchLoadRequest | { figures: never }) => {
      if ('figures' in message) return resolve(message.figures);
      if (message.load === 'start') {
        stopLoad = searchLoad(message.port, message.token);
        child.send({});
      } else {
        void stopLoad!().then((tally) => child.send({ tally }), reject);
      }
    });
    child.once('exit', (code) => reject(new Error(`search-scale.ts exited ${code}`)));
  });
}

export async function searchBench() {
  const relevance = await relevancePerStore();
  console.log('\nSearch relevance (test/catalog/store/search/search-fixtures.json, limit 5)');
  console.table(
    Object.fromEntries(
      Object.entries(relevance).map(([store, r]) => [
        store,
        {
          engine: r.engine,
          queries: r.queries,
          'top-5 hit rate': r.top5HitRate,
          MRR: r.mrr,
          'goal (embedded)': `hit rate ${RELEVANCE_GOALS.top5HitRate}, MRR >= ${RELEVANCE_GOALS.mrr}`,
        },
      ]),
    ),
  );
  const figures = await scale();
  const { cpu, memory, rebuild } = figures as Record<string, Record<string, number>>;
  const { alone, underLoad: load } = figures.import as Record<string, Record<string, number>>;
  console.log(`\nSearch at scale: 165 real tools against 10,000 (bench/synthetic-catalog.ts)`);
  console.log(
    `search CPU per query: ${cpu!.microsPerQueryAt165} µs at 165, ${cpu!.microsPerQueryAt10000} µs ` +
      `at 10,000: ratio ${cpu!.ratio} (goal <= ${GOALS.cpuRatio})`,
  );
  console.log(
    `embedded store memory at 10,000 tools (heap): ${memory!.totalMb} MB = records ` +
      `${memory!.recordsMb} MB + snapshot (search index, orders) ${memory!.snapshotMb} MB + spare ` +
      `search index ${memory!.spareIndexMb} MB`,
  );
  console.log(
    `snapshot built anew at 10,000 tools (at start; when the outbox misses entries): ` +
      `${rebuild!.inOneGoMs} ms in one go; ${rebuild!.inSlicesMs} ms ` +
      `in slices, longest event-loop pause ${rebuild!.inSlicesMaxPauseMs} ms (idle process: ` +
      `${rebuild!.idleMaxPauseMs} ms)`,
  );
  const imported = `operator import of ${(figures.import as Record<string, number>).importedTools} changed tools (catalog CLI)`;
  console.log(
    `${imported}, no other load: served ${alone!.servedAfterMs} ms after the CLI ended ` +
      `(goal <= ${GOALS.servedAfterMs}; the catalog had ${alone!.cpuShare} of a CPU); longest ` +
      `event-loop pause while the catalog takes it in ${alone!.maxPauseMs} ms (goal <= ` +
      `${GOALS.maxPauseMs}; longest GC ${alone!.longestGcMs} ms), against ${alone!.idleMaxPauseMs} ms ` +
      `in an idle process`,
  );
  console.log(
    `${imported}, under search load (${load!.requests} searches over HTTP, ${load!.failed} failed): ` +
      `served ${load!.servedAfterMs} ms after the CLI ended (goal <= ${GOALS.servedAfterMs}; ` +
      `the catalog had ${load!.cpuShare} of a CPU)`,
  );
  console.table({
    'taking in the import': {
      'window ms': load!.windowMs,
      'longest pause ms': load!.maxPauseMs,
      'p99 pause ms': load!.p99PauseMs,
      'longest GC ms': load!.longestGcMs,
      'longest search request ms': load!.longestRequestMs,
    },
    'same load, no import': {
      'window ms': load!.baselineWindowMs,
      'longest pause ms': load!.baselineMaxPauseMs,
      'p99 pause ms': load!.baselineP99PauseMs,
      'longest GC ms': load!.baselineLongestGcMs,
      'longest search request ms': load!.baselineLongestRequestMs,
    },
  });
  console.log(
    `longest pause taking in the import ÷ same load without: ` +
      `${Math.round((load!.maxPauseMs! / load!.baselineMaxPauseMs!) * 100) / 100}`,
  );
  return { relevance, scale: figures, goals: { ...GOALS, relevance: RELEVANCE_GOALS } };
}
