import { fork } from 'node:child_process';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { loadDataset } from '../services/catalog/src/dataset';
import type { CatalogStore } from '../services/catalog/src/store/catalog-store';
import { EmbeddedStore } from '../services/catalog/src/store/embedded-store';
import { MongoStore } from '../services/catalog/src/store/mongo-store';
import { RELEVANCE_GOALS, measureRelevance } from '../test/catalog/search-relevance';
import { tempDataDir } from '../test/support/services';
import { cpuLayout, pin } from './cpu-layout';

/**
 * `npm run bench -- search` (and part of `npm run bench`): search relevance per store, with the
 * fixtures of test/catalog/search-fixtures.json, and the scale figures of search-scale.ts, each
 * printed next to its goal (SPEC B11; docs/performance.md).
 */

const GOALS = {
  cpuRatio: 10,
  maxPauseTakingInImportMs: 50,
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

/** The scale figures, measured in a process of its own that can force garbage collection. */
function scale(): Promise<Record<string, Record<string, number>>> {
  const child = fork(path.join(__dirname, 'search-scale.ts'), {
    execArgv: ['--expose-gc', '--import', 'tsx'],
    stdio: 'inherit',
  });
  const layout = cpuLayout();
  if (layout) pin(child.pid!, layout.measured);
  return new Promise((resolve, reject) => {
    child.once('message', resolve as never);
    child.once('exit', (code) => reject(new Error(`search-scale.ts exited ${code}`)));
  });
}

export async function searchBench() {
  const relevance = await relevancePerStore();
  console.log('\nSearch relevance (test/catalog/search-fixtures.json, limit 5)');
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
  const { cpu, memory, rebuild } = figures;
  const imported = figures.import!;
  console.log(`\nSearch at scale: 165 real tools against 10,000 (bench/synthetic-catalog.ts)`);
  console.log(
    `search CPU per query: ${cpu!.microsPerQueryAt165} µs at 165, ${cpu!.microsPerQueryAt10000} µs ` +
      `at 10,000: ratio ${cpu!.ratio} (goal <= ${GOALS.cpuRatio})`,
  );
  console.log(
    `embedded store memory at 10,000 tools (heap): ${memory!.totalMb} MB = records ` +
      `${memory!.recordsMb} MB + snapshot (search index, orders) ${memory!.snapshotMb} MB`,
  );
  console.log(
    `snapshot rebuild at 10,000 tools: ${rebuild!.inOneGoMs} ms in one go; ${rebuild!.inSlicesMs} ms ` +
      `in slices, longest event-loop pause ${rebuild!.inSlicesMaxPauseMs} ms`,
  );
  console.log(
    `operator import of ${imported.importedTools} changed tools (catalog CLI) under search load: ` +
      `longest event-loop pause while the catalog takes it in ${imported.maxPauseTakingInImportMs} ms ` +
      `(goal <= ${GOALS.maxPauseTakingInImportMs}; p99 ${imported.p99PauseTakingInImportMs} ms), ` +
      `against ${imported.maxPauseUnderLoadMs} ms (p99 ${imported.p99PauseUnderLoadMs} ms) under the ` +
      `same load without an import; served ${imported.importServedAfterMs} ms after the CLI ended`,
  );
  return { relevance, scale: figures, goals: { ...GOALS, relevance: RELEVANCE_GOALS } };
}
