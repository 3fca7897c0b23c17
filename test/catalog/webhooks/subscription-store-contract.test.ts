import {
  MAX_SUBSCRIPTIONS_PER_KEY,
  type Subscription,
  TooManySubscriptionsError,
} from '../../../services/catalog/src/webhooks/webhook-types';
import { onEverySubscriptionStore } from '../../support/subscription-store-suites';

let sequence = 0;

function subscription(overrides: Partial<Subscription> = {}): Subscription {
  sequence += 1;
  return {
    id: `wh_${String(sequence).padStart(4, '0')}`,
    keyId: 'key-a',
    url: `https://hooks.example.com/${sequence}`,
    events: ['tool.created', 'tool.updated'],
    description: null,
    secret: `whsec_${Buffer.from(`secret-${sequence}`).toString('base64')}`,
    createdAt: new Date(Date.UTC(2025, 0, 1, 0, 0, sequence)).toISOString(),
    disabledAt: null,
    ...overrides,
  };
}

const ids = (subscriptions: Subscription[]) => subscriptions.map((s) => s.id);

onEverySubscriptionStore('subscription_contract', (storeName, open) => {
  describe(`the ${storeName} subscription store`, () => {
    test('keeps what was created, field for field, for its key only', async () => {
      const [store] = await open(1);
      const first = subscription({ description: 'CI hook', events: ['quota.warning'] });
      const second = subscription();
      const foreign = subscription({ keyId: 'key-b' });
      for (const s of [second, foreign, first]) await store!.create(s);

      expect(await store!.get('key-a', first.id)).toEqual(first);
      expect(await store!.list('key-a')).toEqual([first, second]);
      expect(await store!.list('key-b')).toEqual([foreign]);
      expect(await store!.list('key-c')).toEqual([]);
      expect(await store!.get('key-a', foreign.id)).toBeNull();
      expect(await store!.get('key-a', 'wh_missing')).toBeNull();
    });

    test("deletes only the key's own subscription", async () => {
      const [store] = await open(1);
      const own = subscription();
      const foreign = subscription({ keyId: 'key-b' });
      await store!.create(own);
      await store!.create(foreign);

      expect(await store!.delete('key-a', foreign.id)).toBe(false);
      expect(await store!.get('key-b', foreign.id)).toEqual(foreign);
      expect(await store!.delete('key-a', own.id)).toBe(true);
      expect(await store!.get('key-a', own.id)).toBeNull();
      expect(await store!.delete('key-a', own.id)).toBe(false);
    });

    test(`refuses a key's subscription past ${MAX_SUBSCRIPTIONS_PER_KEY}, and takes one after a delete`, async () => {
      const [store] = await open(1);
      const created = [];
      for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_KEY; i += 1) {
        const s = subscription();
        await store!.create(s);
        created.push(s);
      }
      const extra = subscription();
      await expect(store!.create(extra)).rejects.toBeInstanceOf(TooManySubscriptionsError);
      expect(await store!.list('key-a')).toHaveLength(MAX_SUBSCRIPTIONS_PER_KEY);
      expect(await store!.get('key-a', extra.id)).toBeNull();
      // Another key has its own allowance.
      await store!.create(subscription({ keyId: 'key-b' }));

      await store!.delete('key-a', created[3]!.id);
      await store!.create(extra);
      expect(await store!.get('key-a', extra.id)).toEqual(extra);
      await expect(store!.create(subscription())).rejects.toBeInstanceOf(TooManySubscriptionsError);
    });

    test('the limit holds when two stores over the same data create at once', async () => {
      const stores = await open(2);
      const attempts = Array.from({ length: 16 }, (_, i) =>
        stores[i % 2]!.create(subscription({ keyId: 'key-race' })),
      );
      const results = await Promise.allSettled(attempts);
      const refused = results.filter((r) => r.status === 'rejected');
      expect(refused).toHaveLength(16 - MAX_SUBSCRIPTIONS_PER_KEY);
      for (const r of refused) {
        expect((r as PromiseRejectedResult).reason).toBeInstanceOf(TooManySubscriptionsError);
      }
      expect(await stores[0]!.list('key-race')).toHaveLength(MAX_SUBSCRIPTIONS_PER_KEY);
      expect(ids(await stores[1]!.list('key-race'))).toEqual(
        ids(await stores[0]!.list('key-race')),
      );
    });

    describe('matching', () => {
      test('finds subscriptions to the event of active Enterprise keys only', async () => {
        const [store] = await open(1);
        const created = subscription({ events: ['tool.created'] });
        const both = subscription({ events: ['tool.deleted', 'tool.created'] });
        const deletedOnly = subscription({ events: ['tool.deleted'] });
        const pro = subscription({ keyId: 'key-pro', events: ['tool.created'] });
        const revoked = subscription({ keyId: 'key-revoked', events: ['tool.created'] });
        const unknown = subscription({ keyId: 'key-unknown', events: ['tool.created'] });
        const other = subscription({ keyId: 'key-b', events: ['tool.created'] });
        for (const s of [created, both, deletedOnly, pro, revoked, unknown, other]) {
          await store!.create(s);
        }
        await store!.setKeyStatus({ keyId: 'key-a', tier: 'enterprise', revoked: false });
        await store!.setKeyStatus({ keyId: 'key-b', tier: 'enterprise', revoked: false });
        await store!.setKeyStatus({ keyId: 'key-pro', tier: 'pro', revoked: false });
        await store!.setKeyStatus({ keyId: 'key-revoked', tier: 'enterprise', revoked: true });

        expect(ids(await store!.matching('tool.created'))).toEqual([created.id, both.id, other.id]);
        expect(await store!.matching('tool.created')).toContainEqual(created);
        expect(ids(await store!.matching('tool.deleted'))).toEqual([both.id, deletedOnly.id]);
        expect(ids(await store!.matching('tool.created', 'key-b'))).toEqual([other.id]);
        expect(await store!.matching('tool.created', 'key-pro')).toEqual([]);
        expect(await store!.matching('quota.warning')).toEqual([]);
      });

      test('follows the key: a downgrade stops matching, an upgrade starts it', async () => {
        const [store] = await open(1);
        const s = subscription({ events: ['quota.warning'] });
        await store!.create(s);
        await store!.setKeyStatus({ keyId: 'key-a', tier: 'enterprise', revoked: false });
        expect(ids(await store!.matching('quota.warning'))).toEqual([s.id]);
        await store!.setKeyStatus({ keyId: 'key-a', tier: 'pro', revoked: false });
        expect(await store!.matching('quota.warning')).toEqual([]);
        await store!.setKeyStatus({ keyId: 'key-a', tier: 'enterprise', revoked: false });
        expect(ids(await store!.matching('quota.warning'))).toEqual([s.id]);
      });

      test('a revocation is final: a later active report does not bring the key back', async () => {
        const [store] = await open(1);
        const s = subscription({ events: ['tool.updated'] });
        await store!.create(s);
        await store!.setKeyStatus({ keyId: 'key-a', tier: 'enterprise', revoked: true });
        await store!.setKeyStatus({ keyId: 'key-a', tier: 'enterprise', revoked: false });
        expect(await store!.matching('tool.updated')).toEqual([]);
      });

      test('a disabled subscription no longer matches; the first disable time stays', async () => {
        const [store] = await open(1);
        const s = subscription({ events: ['tool.updated'] });
        const kept = subscription({ events: ['tool.updated'] });
        await store!.create(s);
        await store!.create(kept);
        await store!.setKeyStatus({ keyId: 'key-a', tier: 'enterprise', revoked: false });

        await store!.disable(s.id, '2025-02-01T00:00:00.000Z');
        await store!.disable(s.id, '2025-03-01T00:00:00.000Z');
        expect(ids(await store!.matching('tool.updated'))).toEqual([kept.id]);
        expect(await store!.get('key-a', s.id)).toEqual({
          ...s,
          disabledAt: '2025-02-01T00:00:00.000Z',
        });
        // Still the key's: listed, and counted against its limit.
        expect(ids(await store!.list('key-a'))).toEqual([s.id, kept.id]);
      });
    });

    test('a second store over the same data sees every write of the first', async () => {
      const [writer, reader] = await open(2);
      const s = subscription({ events: ['tool.deleted'] });
      await writer!.create(s);
      await writer!.setKeyStatus({ keyId: 'key-a', tier: 'enterprise', revoked: false });
      expect(await reader!.get('key-a', s.id)).toEqual(s);
      expect(ids(await reader!.matching('tool.deleted'))).toEqual([s.id]);
      await writer!.delete('key-a', s.id);
      expect(await reader!.list('key-a')).toEqual([]);
    });
  });
});
