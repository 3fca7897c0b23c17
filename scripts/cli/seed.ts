import { Type } from '@sinclair/typebox';
import { CatalogConfigSchema } from '../../services/catalog/src/config';
import { loadDataset } from '../../services/catalog/src/records/dataset';
import { MongoStore } from '../../services/catalog/src/store/mongo-store';
import { loadConfig } from '../../services/shared/config';
import type { Command } from './command-line';

const SeedConfigSchema = Type.Composite([
  Type.Pick(CatalogConfigSchema, ['MONGODB_URI', 'MONGODB_DB', 'SEARCH_ENGINE']),
  Type.Object({ SEARCH_INDEX_WAIT_MS: Type.Integer({ minimum: 0, default: 300_000 }) }),
]);

export const seedCommand: Command = {
  name: 'seed',
  summary: 'create the MongoDB indexes and add the bundled tools it never held (catalog image)',
  description: `Creates the catalog's MongoDB indexes and adds the bundled tools whose slug the catalog has
never held, each recorded in the outbox as tool.created. A tool an operator changed or deleted
is never touched, so running it again (every install and upgrade) changes nothing.

With Atlas Search (SEARCH_ENGINE auto or atlas), also creates or updates the search index of
data/atlas-search-index.json and its synonyms, and waits until it is queryable (at most
SEARCH_INDEX_WAIT_MS, default 300000), telling its progress on stderr ({"progress": …} lines).

Environment: MONGODB_URI (required; a replica set), MONGODB_DB (default tool_directory),
SEARCH_ENGINE (auto, atlas or text; default auto), SEARCH_INDEX_WAIT_MS.

Prints the change summary as JSON, with the search index's state.`,
  failures: 'MONGODB_URI is not set or cannot be reached, a setting is invalid',
  run: async () => {
    const config = loadConfig(SeedConfigSchema);
    if (!config.MONGODB_URI) {
      throw new Error('MONGODB_URI is not set: the embedded store needs no seeding');
    }
    const { tools } = loadDataset();
    const store = await MongoStore.connect(config.MONGODB_URI, config.MONGODB_DB, {
      searchEngine: config.SEARCH_ENGINE,
      searchIndexWaitMs: config.SEARCH_INDEX_WAIT_MS,
      log: (message) => process.stderr.write(`${JSON.stringify({ progress: message })}\n`),
    });
    try {
      const summary = await store.seed(tools);
      return {
        database: config.MONGODB_DB,
        bundled: tools.length,
        createdCount: summary.created.length,
        ...summary,
        searchEngine: store.searchEngine,
        searchIndex: store.searchIndex,
      };
    } finally {
      await store.close();
    }
  },
};
