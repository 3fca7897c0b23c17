import { parseArgs } from 'node:util';
import { Type } from '@sinclair/typebox';
import { CatalogConfigSchema } from '../services/catalog/src/config';
import { loadDataset } from '../services/catalog/src/records/dataset';
import { MongoStore } from '../services/catalog/src/store/mongo-store';
import { loadConfig } from '../services/shared/config';

const USAGE = `Usage: npm run seed
Creates the catalog's MongoDB indexes and adds the bundled tools whose slug the catalog has
never held, each recorded in the outbox as tool.created. A tool an operator changed or deleted
is never touched, so running it again (every install and upgrade) changes nothing.
With Atlas Search (SEARCH_ENGINE auto or atlas), also creates or updates the search index of
data/atlas-search-index.json and its synonyms, and waits until it is queryable (at most
SEARCH_INDEX_WAIT_MS, default 300000), telling its progress on stderr.
Environment: MONGODB_URI (required; a replica set), MONGODB_DB (default tool_directory),
SEARCH_ENGINE (auto, atlas or text; default auto), SEARCH_INDEX_WAIT_MS.
Prints the change summary as JSON, with the search index's state.`;

const SeedConfigSchema = Type.Composite([
  Type.Pick(CatalogConfigSchema, ['MONGODB_URI', 'MONGODB_DB', 'SEARCH_ENGINE']),
  Type.Object({ SEARCH_INDEX_WAIT_MS: Type.Integer({ minimum: 0, default: 300_000 }) }),
]);

class UsageError extends Error {}

function wantsHelp(argv: string[]): boolean {
  try {
    const { values } = parseArgs({
      args: argv,
      options: { help: { type: 'boolean', short: 'h' } },
    });
    return values.help === true;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

async function main(argv: string[]): Promise<void> {
  if (wantsHelp(argv)) {
    console.log(USAGE);
    return;
  }
  const config = loadConfig(SeedConfigSchema);
  if (!config.MONGODB_URI) {
    throw new Error('MONGODB_URI is not set: the embedded store needs no seeding');
  }
  const { tools } = loadDataset();
  const store = await MongoStore.connect(config.MONGODB_URI, config.MONGODB_DB, {
    searchEngine: config.SEARCH_ENGINE,
    searchIndexWaitMs: config.SEARCH_INDEX_WAIT_MS,
    log: (message) => console.error(message),
  });
  try {
    const summary = await store.seed(tools);
    console.log(
      JSON.stringify({
        database: config.MONGODB_DB,
        bundled: tools.length,
        createdCount: summary.created.length,
        ...summary,
        searchEngine: store.searchEngine,
        searchIndex: store.searchIndex,
      }),
    );
  } finally {
    await store.close();
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError) {
    console.error(`${err.message}\n${USAGE}`);
    process.exit(2);
  }
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
