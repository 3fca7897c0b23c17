import { MongoClient } from 'mongodb';
import { generateApiKey, keyDigest } from '../../../services/gateway/src/keys/api-key';
import { EmbeddedKeyStore } from '../../../services/gateway/src/keys/embedded-key-store';
import { issueKey, rollKey } from '../../../services/gateway/src/keys/issue-key';
import {
  ENDED_SECRETS_KEPT,
  KeyChangedError,
  KeyRevokedError,
  type KeyStore,
} from '../../../services/gateway/src/keys/key-store';
import { MongoKeyStore } from '../../../services/gateway/src/keys/mongo-key-store';
import { secretState } from '../../../services/gateway/src/keys/secret-lifecycle';
import { tempDataDir } from '../../support/services';

/**
 * The key store's contract, on the embedded store always and on MongoDB whenever MONGODB_URI is
 * set (a database of its own, dropped afterwards); without it the MongoDB run is said not done.
 */
function onEveryKeyStore(define: (name: string, open: () => Promise<KeyStore>) => void): void {
  define('embedded', async () => new EmbeddedKeyStore(tempDataDir()));
  const mongoUri = process.env.MONGODB_URI;
  if (!mongoUri) {
    console.warn(
      'MongoDB key-store run NOT done: MONGODB_URI is not set. Only the embedded store was tested.',
    );
    return;
  }
  const dbName = `tool_directory_keys_${process.pid}`;
  define('MongoDB', () => MongoKeyStore.connect(mongoUri, dbName));
  afterAll(async () => {
    const client = await MongoClient.connect(mongoUri);
    await client.db(dbName).dropDatabase();
    await client.close();
  });
}

let emails = 0;
const request = () => ({
  tier: 'pro' as const,
  email: `roll-${process.pid}-${(emails += 1)}@example.com`,
  name: 'Roll',
  useCase: '',
});

onEveryKeyStore((name, open) => {
  describe(`key store contract: ${name}`, () => {
    let store: KeyStore;
    beforeAll(async () => {
      store = await open();
    });
    afterAll(() => store.close());

    /** What a secret is now, as every path that accepts a key sees it. */
    async function state(secret: string, now = Date.now()) {
      const match = await store.findByDigest(keyDigest(secret));
      return match && { keyId: match.record.id, ...secretState(match, keyDigest(secret), now) };
    }

    test('a roll: a new current secret, the old one working until its grace ends, same id and tier', async () => {
      const { apiKey: old, record } = await issueKey(store, request());
      const rolled = (await rollKey(store, record.id, 3_600))!;
      expect(rolled.record).toMatchObject({
        id: record.id,
        tier: 'pro',
        digest: keyDigest(rolled.apiKey),
        previousDigest: keyDigest(old),
        previousExpiresAt: rolled.previousKeyExpiresAt,
      });
      expect(Date.parse(rolled.previousKeyExpiresAt) - Date.now()).toBeGreaterThan(3_590_000);
      expect(await state(rolled.apiKey)).toEqual({ keyId: record.id, kind: 'current' });
      expect(await state(old)).toEqual({
        keyId: record.id,
        kind: 'previous',
        until: rolled.previousKeyExpiresAt,
      });
      // By the key itself (its digest) as well as by its id.
      const again = (await rollKey(store, keyDigest(rolled.apiKey), 60))!;
      expect(again.record.id).toBe(record.id);
    });

    test('rolling again ends the earlier grace at once: that secret is kept as replaced', async () => {
      const { apiKey: first, record } = await issueKey(store, request());
      const second = (await rollKey(store, record.id, 3_600))!;
      const before = Date.now();
      const third = (await rollKey(store, record.id, 3_600))!;
      const ended = await state(first);
      expect(ended).toMatchObject({ keyId: record.id, kind: 'ended', reason: 'rolled', url: null });
      expect(Date.parse((ended as { at: string }).at)).toBeGreaterThanOrEqual(before - 1);
      expect(await state(second.apiKey)).toMatchObject({ kind: 'previous' });
      expect(await state(third.apiKey)).toMatchObject({ kind: 'current' });
    });

    test('a grace of 0 ends the old secret at once; a grace that ended, too', async () => {
      const { apiKey: leaked, record } = await issueKey(store, request());
      const rolled = (await rollKey(store, record.id, 0))!;
      expect(rolled.record.previousDigest).toBeNull();
      expect(await state(leaked)).toMatchObject({ kind: 'ended', reason: 'rolled' });

      const { apiKey: old, record: other } = await issueKey(store, request());
      const graced = (await rollKey(store, other.id, 60))!;
      expect(await state(old)).toMatchObject({ keyId: other.id, kind: 'previous' });
      // Asked as of the end of the grace: the store needs no write for a grace to run out.
      expect(await state(old, Date.parse(graced.previousKeyExpiresAt))).toEqual({
        keyId: other.id,
        kind: 'ended',
        reason: 'rolled',
        at: graced.previousKeyExpiresAt,
        url: null,
      });
    });

    test('a roll only while the secret that asks is current: of concurrent rolls one wins', async () => {
      const { apiKey, record } = await issueKey(store, request());
      const ifCurrent = keyDigest(apiKey);
      const results = await Promise.allSettled(
        Array.from({ length: 5 }, () => rollKey(store, record.id, 0, { ifCurrent })),
      );
      const won = results.flatMap((r) => (r.status === 'fulfilled' && r.value ? [r.value] : []));
      const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(4);
      for (const err of lost) expect(err).toBeInstanceOf(KeyChangedError);
      expect(await state(won[0]!.apiKey)).toMatchObject({ kind: 'current' });
      expect(await state(apiKey)).toMatchObject({ kind: 'ended', reason: 'rolled' });
      // The previous secret of a graced roll is not current either.
      const next = (await rollKey(store, record.id, 3_600))!;
      await expect(
        rollKey(store, record.id, 0, { ifCurrent: keyDigest(won[0]!.apiKey) }),
      ).rejects.toBeInstanceOf(KeyChangedError);
      expect(await state(next.apiKey)).toMatchObject({ kind: 'current' });
    });

    test('a revoked key cannot be rolled; an unknown one is null', async () => {
      const { record } = await issueKey(store, request());
      await store.update(record.id, { revokedAt: new Date().toISOString() });
      await expect(rollKey(store, record.id, 60)).rejects.toBeInstanceOf(KeyRevokedError);
      expect(await rollKey(store, 'key_nope', 60)).toBeNull();
      expect(await rollKey(store, keyDigest(generateApiKey()), 60)).toBeNull();
    });

    test('a revocation keeps its first reason: a leak names its URL, on every secret of the key', async () => {
      const { apiKey: old, record } = await issueKey(store, request());
      const rolled = (await rollKey(store, record.id, 3_600))!;
      const at = new Date().toISOString();
      const url = 'https://github.com/octo/app/blob/main/.env';
      await store.update(record.id, { revokedAt: at, revokedReason: 'leaked', revokedUrl: url });
      await store.update(record.id, { revokedAt: new Date(Date.now() + 5).toISOString() });
      for (const secret of [rolled.apiKey, old]) {
        expect(await state(secret)).toEqual({
          keyId: record.id,
          kind: 'ended',
          reason: 'leaked',
          at,
          url,
        });
      }
      expect(await store.find(record.id)).toMatchObject({ revokedAt: at, revokedReason: 'leaked' });
    });

    test('a previous secret can be ended alone (a leak), the current one working on', async () => {
      const { apiKey: old, record } = await issueKey(store, request());
      const rolled = (await rollKey(store, record.id, 3_600))!;
      const url = 'https://gist.github.com/octo/1';
      expect(
        await store.endPreviousSecret(record.id, keyDigest(rolled.apiKey), 'leaked', url),
      ).toBeNull();
      const after = await store.endPreviousSecret(record.id, keyDigest(old), 'leaked', url);
      expect(after).toMatchObject({
        previousDigest: null,
        previousExpiresAt: null,
        revokedAt: null,
      });
      expect(await state(old)).toMatchObject({ kind: 'ended', reason: 'leaked', url });
      expect(await state(rolled.apiKey)).toMatchObject({ kind: 'current' });
    });

    test(`a key remembers its newest ${ENDED_SECRETS_KEPT} ended secrets`, async () => {
      const { apiKey: first, record } = await issueKey(store, request());
      const secrets = [first];
      for (let i = 0; i <= ENDED_SECRETS_KEPT; i++) {
        secrets.push((await rollKey(store, record.id, 0))!.apiKey);
      }
      // Rolled in the same millisecond, ended secrets still keep their order.
      expect(await state(secrets[1]!)).toMatchObject({ kind: 'ended', reason: 'rolled' });
      expect(await state(secrets.at(-2)!)).toMatchObject({ kind: 'ended', reason: 'rolled' });
      expect(await state(secrets.at(-1)!)).toMatchObject({ kind: 'current' });
      expect(await state(first)).toBeNull();
    });

    test('every change records its event once, with who made it; a change that changes nothing, none', async () => {
      const { record } = await issueKey(store, request(), {
        actor: { by: 'self', address: '203.0.113.5' },
      });
      await rollKey(store, record.id, 0, { actor: { by: 'self', address: '203.0.113.5' } });
      await store.update(record.id, { scopes: ['usage'], allowedAddresses: ['10.0.0.0/8'] });
      await store.update(record.id, { scopes: ['usage'] });
      await store.update(record.id, { tier: 'enterprise' });
      await store.update(
        record.id,
        {
          revokedAt: new Date().toISOString(),
          revokedReason: 'leaked',
          revokedUrl: 'https://x.test/1',
        },
        { by: 'leak_report', address: '192.0.2.1' },
      );
      await store.update(record.id, { revokedAt: new Date().toISOString() });
      const events = await store.events(record.id, new Date(Date.now() - 60_000).toISOString());
      expect(events.map((e) => [e.type, e.by, e.address])).toEqual([
        ['leak_reported', 'leak_report', '192.0.2.1'],
        ['tier_changed', 'operator', null],
        ['restricted', 'operator', null],
        ['rolled', 'self', '203.0.113.5'],
        ['created', 'self', '203.0.113.5'],
      ]);
      expect(events[0]!.detail).toEqual({ url: 'https://x.test/1', ended: 'key' });
      expect(events[2]!.detail).toEqual({ scopes: ['usage'], allowedAddresses: ['10.0.0.0/8'] });
      expect(events.at(-1)!.detail).toEqual({ tier: 'pro' });
      expect(await store.events(record.id, new Date(Date.now() + 60_000).toISOString())).toEqual(
        [],
      );
    });

    test('last use: one write per key and minute, whichever of two replicas reports it first', async () => {
      const { record } = await issueKey(store, request());
      const { record: other } = await issueKey(store, request());
      const minute = '2026-05-01T12:00:00.000Z';
      const uses = [
        { keyId: record.id, minute },
        { keyId: other.id, minute },
      ];
      expect(await store.recordUse(uses)).toBe(2);
      // Another replica reporting the same minute, or an earlier one: no write.
      expect(await store.recordUse(uses)).toBe(0);
      expect(
        await store.recordUse([{ keyId: record.id, minute: '2026-05-01T11:59:00.000Z' }]),
      ).toBe(0);
      expect(
        await store.recordUse([{ keyId: record.id, minute: '2026-05-01T12:01:00.000Z' }]),
      ).toBe(1);
      expect((await store.find(record.id))?.lastUsedAt).toBe('2026-05-01T12:01:00.000Z');
      // Not a change of the key: the change log does not name it.
      const { cursor } = await store.changesSince();
      await store.recordUse([{ keyId: record.id, minute: '2026-05-01T12:02:00.000Z' }]);
      const changes = await store.changesSince(cursor);
      expect(changes.missed ? 'missed' : changes.keyIds).toEqual([]);
    });

    test('the change log names every key created, rolled, revoked or re-tiered', async () => {
      const { cursor } = await store.changesSince();
      const { record: created } = await issueKey(store, request());
      const { record: toRoll } = await issueKey(store, request());
      const rolled = (await rollKey(store, toRoll.id, 60))!;
      const { record: toRevoke } = await issueKey(store, request());
      await store.update(toRevoke.id, { revokedAt: new Date().toISOString() });
      const changes = await store.changesSince(cursor);
      if (changes.missed) throw new Error('the log forgot changes made a moment ago');
      expect(changes.keyIds).toEqual(expect.arrayContaining([created.id, toRoll.id, toRevoke.id]));
      expect(changes.digests).toEqual(
        expect.arrayContaining([created.digest, rolled.record.digest, toRevoke.digest]),
      );
      // Read again from where it stands: nothing new.
      const after = await store.changesSince(changes.cursor);
      expect(after.missed ? 'missed' : [...after.keyIds]).toEqual([]);
    });
  });
});
