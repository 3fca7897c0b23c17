import { parseArgs } from 'node:util';
import { loadDataset } from '../services/catalog/src/dataset';
import { MongoStore } from '../services/catalog/src/store/mongo-store';

const USAGE = `Usage: npm run seed
Creates the catalog's MongoDB indexes and adds the bundled tools whose slug the catalog has
never held, each recorded in the outbox as tool.created. A tool an operator changed or deleted
is never touched, so running it again (every install and upgrade) changes nothing.
Environment: MONGODB_URI (required; a replica set), MONGODB_DB (default tool_directory).
Prints the change summary as JSON.`;

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
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('MONGODB_URI is not set: the embedded store needs no seeding');
  const dbName = process.env.MONGODB_DB || 'tool_directory';
  const { tools } = loadDataset();
  const store = await MongoStore.connect(uri, dbName);
  try {
    const summary = await store.seed(tools);
    console.log(
      JSON.stringify({
        database: dbName,
        bundled: tools.length,
        createdCount: summary.created.length,
        ...summary,
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
