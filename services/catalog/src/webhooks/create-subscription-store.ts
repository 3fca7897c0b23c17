import { EmbeddedSubscriptionStore } from './embedded-subscription-store';
import { MongoSubscriptionStore } from './mongo-subscription-store';
import type { SubscriptionStore } from './webhook-types';

/** Next to the catalog's data: MongoDB when a URI is configured, else SQLite under DATA_DIR. */
export async function createSubscriptionStore(settings: {
  MONGODB_URI?: string | undefined;
  MONGODB_DB: string;
  DATA_DIR: string;
}): Promise<SubscriptionStore & { readonly kind: string }> {
  if (settings.MONGODB_URI) {
    return MongoSubscriptionStore.connect(settings.MONGODB_URI, settings.MONGODB_DB);
  }
  return new EmbeddedSubscriptionStore(settings.DATA_DIR);
}
