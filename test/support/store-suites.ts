import { MongoClient } from 'mongodb';
import type { CatalogStore } from '../../services/catalog/src/store/catalog-store';
import { MongoStore } from '../../services/catalog/src/store/mongo-store';
import { dataset, embeddedStore } from './catalog';

/**
 * Runs a store suite on the embedded store always, and on MongoDB whenever MONGODB_URI is set:
 * in a database of its own, seeded through the same path as `npm run seed`, dropped afterwards.
 * Without MONGODB_URI it says plainly that the MongoDB run was not done; nothing fakes one.
 */
export function onEveryStore(
  suite: string,
  define: (storeName: string, openStore: () => Promise<CatalogStore>) => void,
): void {
  define('embedded', async () => embeddedStore());

  const mongoUri = process.env.MONGODB_URI;
  if (!mongoUri) {
    console.warn(
      `MongoDB ${suite} run NOT done: MONGODB_URI is not set. Only the embedded store was tested.`,
    );
    return;
  }
  const dbName = `tool_directory_${suite.replace(/\W+/g, '_')}_${process.pid}`;
  define('MongoDB', async () => {
    const store = await MongoStore.connect(mongoUri, dbName);
    await store.seed(dataset.tools);
    return store;
  });
  afterAll(async () => {
    const client = await MongoClient.connect(mongoUri);
    await client.db(dbName).dropDatabase();
    await client.close();
  });
}
