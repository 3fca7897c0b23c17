import { MongoServerError } from 'mongodb';
import {
  KEY_STATUS_COLLECTION,
  KEY_STATUS_INDEXES,
  SUBSCRIPTION_INDEXES,
  disableUpdate,
  freeSlot,
  isSlotTaken,
  keyStatusUpdate,
  matchingPipeline,
  ownedFilter,
  subscriptionDocument,
} from '../../../services/catalog/src/webhooks/mongo-subscription-documents';
import type { Subscription } from '../../../services/catalog/src/webhooks/webhook-types';

const subscription: Subscription = {
  id: 'wh_1',
  keyId: 'key-a',
  url: 'https://hooks.example.com/in',
  events: ['tool.created'],
  description: null,
  secret: 'whsec_eA==',
  createdAt: '2025-01-01T00:00:00.000Z',
  disabledAt: null,
};

function duplicateKey(keyPattern: Record<string, number>): MongoServerError {
  return new MongoServerError({ message: 'E11000 duplicate key error', code: 11000, keyPattern });
}

describe('MongoDB subscription documents', () => {
  test('the per-key limit rests on a unique index of (keyId, slot)', () => {
    expect(SUBSCRIPTION_INDEXES).toContainEqual({
      key: { keyId: 1, slot: 1 },
      name: 'key_slot_unique',
      unique: true,
    });
    expect(SUBSCRIPTION_INDEXES).toContainEqual({
      key: { id: 1 },
      name: 'id_unique',
      unique: true,
    });
    expect(KEY_STATUS_INDEXES).toEqual([
      { key: { keyId: 1 }, name: 'key_id_unique', unique: true },
    ]);
  });

  test('a new subscription takes the lowest free slot, none past the limit', () => {
    expect(freeSlot([])).toBe(0);
    expect(freeSlot([0, 1, 3])).toBe(2);
    expect(freeSlot([9, 8, 7, 6, 5, 4, 3, 2, 1])).toBe(0);
    expect(freeSlot([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])).toBeNull();
    expect(subscriptionDocument(subscription, 4)).toEqual({ ...subscription, slot: 4 });
  });

  test('only a duplicate slot is a lost race; other errors are not', () => {
    expect(isSlotTaken(duplicateKey({ keyId: 1, slot: 1 }))).toBe(true);
    expect(isSlotTaken(duplicateKey({ id: 1 }))).toBe(false);
    expect(isSlotTaken(new MongoServerError({ message: 'other', code: 2 }))).toBe(false);
    expect(isSlotTaken(new Error('E11000 slot'))).toBe(false);
  });

  test('a key reaches only its own subscriptions', () => {
    expect(ownedFilter('key-a')).toEqual({ keyId: 'key-a' });
    expect(ownedFilter('key-a', 'wh_1')).toEqual({ keyId: 'key-a', id: 'wh_1' });
  });

  test('matching joins the key status and keeps active Enterprise keys only', () => {
    const lookup = {
      $lookup: {
        from: KEY_STATUS_COLLECTION,
        localField: 'keyId',
        foreignField: 'keyId',
        as: 'key',
      },
    };
    const activeEnterprise = {
      $match: { key: { $elemMatch: { tier: 'enterprise', revoked: false } } },
    };
    const tail = [{ $sort: { createdAt: 1, id: 1 } }, { $project: { _id: 0, slot: 0, key: 0 } }];
    expect(matchingPipeline('tool.deleted')).toEqual([
      { $match: { events: 'tool.deleted', disabledAt: null } },
      lookup,
      activeEnterprise,
      ...tail,
    ]);
    expect(matchingPipeline('quota.warning', 'key-a')).toEqual([
      { $match: { events: 'quota.warning', disabledAt: null, keyId: 'key-a' } },
      lookup,
      activeEnterprise,
      ...tail,
    ]);
  });

  test('disabling keeps the first time it happened', () => {
    expect(disableUpdate('wh_1', '2025-02-01T00:00:00.000Z')).toEqual({
      filter: { id: 'wh_1', disabledAt: null },
      update: { $set: { disabledAt: '2025-02-01T00:00:00.000Z' } },
    });
  });

  test('a key status is upserted, and a revocation stays', () => {
    expect(keyStatusUpdate({ keyId: 'key-a', tier: 'pro', revoked: false })).toEqual({
      filter: { keyId: 'key-a' },
      update: [
        {
          $set: {
            keyId: 'key-a',
            tier: 'pro',
            revoked: { $or: [{ $eq: ['$revoked', true] }, false] },
          },
        },
      ],
    });
    expect(
      keyStatusUpdate({ keyId: 'key-a', tier: 'enterprise', revoked: true }).update[0],
    ).toEqual({
      $set: {
        keyId: 'key-a',
        tier: 'enterprise',
        revoked: { $or: [{ $eq: ['$revoked', true] }, true] },
      },
    });
  });
});
