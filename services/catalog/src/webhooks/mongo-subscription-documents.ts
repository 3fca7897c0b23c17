import { type Document, type Filter, type IndexDescription, MongoServerError } from 'mongodb';
import {
  type KeyStatus,
  MAX_SUBSCRIPTIONS_PER_KEY,
  type SubscribableEvent,
  type Subscription,
} from './webhook-types';

/**
 * The MongoDB documents of the subscription store, as pure functions (unit-tested as
 * documents; mongo-subscription-store.ts only sends them).
 */

export const SUBSCRIPTIONS_COLLECTION = 'webhook_subscriptions';
export const KEY_STATUS_COLLECTION = 'webhook_key_status';

/**
 * A stored subscription holds one of its key's MAX_SUBSCRIPTIONS_PER_KEY numbered slots. The
 * unique index on (keyId, slot) is what enforces the limit: two replicas that both pick the
 * last free slot collide there, and the loser looks again and finds none. No counter to drift,
 * no transaction needed.
 */
export type SubscriptionDocument = Subscription & { slot: number };
export type KeyStatusDocument = KeyStatus;

export const SUBSCRIPTION_INDEXES: IndexDescription[] = [
  { key: { id: 1 }, name: 'id_unique', unique: true },
  { key: { keyId: 1, slot: 1 }, name: 'key_slot_unique', unique: true },
  { key: { keyId: 1, createdAt: 1, id: 1 }, name: 'by_key' },
  { key: { events: 1 }, name: 'by_event' },
];

export const KEY_STATUS_INDEXES: IndexDescription[] = [
  { key: { keyId: 1 }, name: 'key_id_unique', unique: true },
];

export const SUBSCRIPTION_PROJECTION = { _id: 0, slot: 0 } as const;
export const SLOT_PROJECTION = { _id: 0, slot: 1 } as const;
export const SUBSCRIPTION_SORT = { createdAt: 1, id: 1 } as const;

/** The key's subscriptions; with an id, that one if the key owns it. */
export function ownedFilter(keyId: string, id?: string): Filter<SubscriptionDocument> {
  return id === undefined ? { keyId } : { keyId, id };
}

/** The lowest slot not in `used`, or null when the key holds all of them. */
export function freeSlot(used: readonly number[]): number | null {
  const taken = new Set(used);
  for (let slot = 0; slot < MAX_SUBSCRIPTIONS_PER_KEY; slot += 1) {
    if (!taken.has(slot)) return slot;
  }
  return null;
}

export function subscriptionDocument(
  subscription: Subscription,
  slot: number,
): SubscriptionDocument {
  return { ...subscription, slot };
}

/** True when an insert lost the race for its slot (a duplicate of the key_slot_unique index). */
export function isSlotTaken(err: unknown): boolean {
  return (
    err instanceof MongoServerError &&
    err.code === 11000 &&
    err.keyPattern !== undefined &&
    'slot' in err.keyPattern
  );
}

/**
 * Active subscriptions to `type` (of one key if given) whose key's last known status is an
 * active Enterprise key. The status is joined by $lookup rather than copied onto each
 * subscription: a copy could miss a revocation that lands while a subscription is created.
 */
export function matchingPipeline(type: SubscribableEvent, keyId?: string): Document[] {
  return [
    { $match: { events: type, disabledAt: null, ...(keyId === undefined ? {} : { keyId }) } },
    {
      $lookup: {
        from: KEY_STATUS_COLLECTION,
        localField: 'keyId',
        foreignField: 'keyId',
        as: 'key',
      },
    },
    { $match: { key: { $elemMatch: { tier: 'enterprise', revoked: false } } } },
    { $sort: SUBSCRIPTION_SORT },
    { $project: { ...SUBSCRIPTION_PROJECTION, key: 0 } },
  ];
}

/** The first 410 is the moment it was disabled; a later one changes nothing. */
export function disableUpdate(id: string, at: string): { filter: Document; update: Document } {
  return { filter: { id, disabledAt: null }, update: { $set: { disabledAt: at } } };
}

/**
 * Records a key's status (upserted). A revocation is final (the gateway never un-revokes a
 * key): a late "active" report, say from a request already in flight, keeps it revoked.
 */
export function keyStatusUpdate(status: KeyStatus): { filter: Document; update: Document[] } {
  return {
    filter: { keyId: status.keyId },
    update: [
      {
        $set: {
          keyId: status.keyId,
          tier: status.tier,
          revoked: { $or: [{ $eq: ['$revoked', true] }, status.revoked] },
        },
      },
    ],
  };
}
