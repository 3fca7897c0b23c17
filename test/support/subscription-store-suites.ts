import { MongoClient } from 'mongodb';
import { EmbeddedSubscriptionStore } from '../../services/catalog/src/webhooks/embedded-subscription-store';
import { MongoSubscriptionStore } from '../../services/catalog/src/webhooks/mongo-subscription-store';
import type { SubscriptionStore } from '../../services/catalog/src/webhooks/webhook-types';
import { tempDataDir } from './services';

/**
 * Opens fresh, empty subscription data and returns `count` stores over it: one process, or
 * several catalog replicas (or processes sharing DATA_DIR) looking at the same subscriptions.
 */
export type OpenSubscriptionStores = (count: number) => Promise<SubscriptionStore[]>;

/**
 * Runs a subscription store suite on the embedded store always, and on MongoDB whenever
 * MONGODB_URI is set, each `open` in a database of its own, all dropped afterwards. Without
 * MONGODB_URI it says plainly that the MongoDB run was not done; nothing fakes one.
 */
export function onEverySubscriptionStore(
  suite: string,
  define: (storeName: string, open: OpenSubscriptionStores) => void,
): void {
  const opened: SubscriptionStore[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((store) => store.close()));
  });
  const keep = (stores: SubscriptionStore[]) => {
    opened.push(...stores);
    return stores;
  };

  define('embedded', async (count) => {
    const dataDir = tempDataDir();
    return keep(Array.from({ length: count }, () => new EmbeddedSubscriptionStore(dataDir)));
  });

  const mongoUri = process.env.MONGODB_URI;
  if (!mongoUri) {
    console.warn(
      `MongoDB ${suite} run NOT done: MONGODB_URI is not set. Only the embedded store was tested.`,
    );
    return;
  }
  const dbNames: string[] = [];
  define('MongoDB', async (count) => {
    const dbName = `tool_directory_${suite.replace(/\W+/g, '_')}_${process.pid}_${dbNames.length}`;
    dbNames.push(dbName);
    return keep(
      await Promise.all(
        Array.from({ length: count }, () => MongoSubscriptionStore.connect(mongoUri, dbName)),
      ),
    );
  });
  afterAll(async () => {
    const client = await MongoClient.connect(mongoUri);
    await Promise.all(dbNames.map((dbName) => client.db(dbName).dropDatabase()));
    await client.close();
  });
}
