import type { Collection, MongoClient } from 'mongodb';
import { connectMongo } from '../../../shared/mongo';
import {
  KEY_STATUS_COLLECTION,
  KEY_STATUS_INDEXES,
  type KeyStatusDocument,
  SLOT_PROJECTION,
  SUBSCRIPTION_INDEXES,
  SUBSCRIPTION_PROJECTION,
  SUBSCRIPTION_SORT,
  SUBSCRIPTIONS_COLLECTION,
  type SubscriptionDocument,
  disableUpdate,
  freeSlot,
  isSlotTaken,
  keyStatusUpdate,
  matchingPipeline,
  ownedFilter,
  subscriptionDocument,
} from './mongo-subscription-documents';
import {
  type KeyStatus,
  MAX_SUBSCRIPTIONS_PER_KEY,
  type SubscribableEvent,
  type Subscription,
  type SubscriptionStore,
  TooManySubscriptionsError,
} from './webhook-types';

/**
 * Subscriptions in MongoDB (when MONGODB_URI is set), shared by every catalog replica: a thin
 * adapter that sends the documents of mongo-subscription-documents.ts.
 */
export class MongoSubscriptionStore implements SubscriptionStore {
  readonly kind = 'mongodb';

  private constructor(
    private readonly client: MongoClient,
    private readonly subscriptions: Collection<SubscriptionDocument>,
    private readonly keyStatus: Collection<KeyStatusDocument>,
  ) {}

  static async connect(uri: string, dbName: string): Promise<MongoSubscriptionStore> {
    const client = await connectMongo(uri, 'tool-directory-catalog-webhooks');
    const db = client.db(dbName);
    const subscriptions = db.collection<SubscriptionDocument>(SUBSCRIPTIONS_COLLECTION);
    const keyStatus = db.collection<KeyStatusDocument>(KEY_STATUS_COLLECTION);
    await subscriptions.createIndexes(SUBSCRIPTION_INDEXES);
    await keyStatus.createIndexes(KEY_STATUS_INDEXES);
    return new MongoSubscriptionStore(client, subscriptions, keyStatus);
  }

  async create(subscription: Subscription): Promise<void> {
    // Each lost race means another insert took a slot, so this ends within the limit's tries.
    for (let attempt = 0; attempt <= MAX_SUBSCRIPTIONS_PER_KEY; attempt += 1) {
      const used = await this.subscriptions
        .find(ownedFilter(subscription.keyId), { projection: SLOT_PROJECTION })
        .toArray();
      const slot = freeSlot(used.map((document) => document.slot));
      if (slot === null) break;
      try {
        await this.subscriptions.insertOne(subscriptionDocument(subscription, slot));
        return;
      } catch (err) {
        if (!isSlotTaken(err)) throw err;
      }
    }
    throw new TooManySubscriptionsError();
  }

  list(keyId: string): Promise<Subscription[]> {
    return this.subscriptions
      .find<Subscription>(ownedFilter(keyId), { projection: SUBSCRIPTION_PROJECTION })
      .sort(SUBSCRIPTION_SORT)
      .toArray();
  }

  get(keyId: string, id: string): Promise<Subscription | null> {
    return this.subscriptions.findOne<Subscription>(ownedFilter(keyId, id), {
      projection: SUBSCRIPTION_PROJECTION,
    });
  }

  async delete(keyId: string, id: string): Promise<boolean> {
    return (await this.subscriptions.deleteOne(ownedFilter(keyId, id))).deletedCount > 0;
  }

  matching(type: SubscribableEvent, keyId?: string): Promise<Subscription[]> {
    return this.subscriptions.aggregate<Subscription>(matchingPipeline(type, keyId)).toArray();
  }

  async disable(id: string, at: string): Promise<void> {
    const { filter, update } = disableUpdate(id, at);
    await this.subscriptions.updateOne(filter, update);
  }

  async setKeyStatus(status: KeyStatus): Promise<void> {
    const { filter, update } = keyStatusUpdate(status);
    await this.keyStatus.updateOne(filter, update, { upsert: true });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
