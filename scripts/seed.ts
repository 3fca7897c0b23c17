import { parseArgs } from 'node:util';
import { loadDataset } from '../services/catalog/src/dataset';
import { MongoStore } from '../services/catalog/src/store/mongo-store';

/** What `npm run seed` does; `npm run seed -- --help` prints it. */
const USAGE = `Usage: npm run seed
Creates the catalog's indexes and upserts the bundled dataset by slug into MONGODB_URI (database
MONGODB_DB, default tool_directory). Running it again changes nothing.`;

async function main(): Promise<void> {
  if (parseArgs({ options: { help: { type: 'boolean', short: 'h' } } }).values.help) {
    console.log(USAGE);
    return;
  }
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('MONGODB_URI is not set: the embedded store needs no seeding');
  const dbName = process.env.MONGODB_DB || 'tool_directory';
  const { tools } = loadDataset();
  const store = await MongoStore.connect(uri, dbName);
  try {
    const result = await store.seed(tools);
    console.log(JSON.stringify({ database: dbName, tools: tools.length, ...result }));
  } finally {
    await store.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
