import { MongoClient } from 'mongodb';
import { generateApiKey, keyDigest } from '../../gateway/src/keys/api-key';
import { EmbeddedKeyStore } from '../../gateway/src/keys/embedded-key-store';
import { issueKey, rollKey } from '../../gateway/src/keys/issue-key';
import { KeyRevokedError, type KeyStore } from '../../gateway/src/keys/key-store';
import { MongoKeyStore } from '../../gateway/src/keys/mongo-key-store';
import { tempDataDir } from '../support/services';

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
      expect((await store.findByDigest(keyDigest(rolled.apiKey)))?.id).toBe(record.id);
      expect((await store.findByDigest(keyDigest(old)))?.id).toBe(record.id);
      // By the key itself (its digest) as well as by its id.
      const again = (await rollKey(store, keyDigest(rolled.apiKey), 60))!;
      expect(again.record.id).toBe(record.id);
    });

    test('rolling again ends the earlier grace at once', async () => {
      const { apiKey: first, record } = await issueKey(store, request());
      const second = (await rollKey(store, record.id, 3_600))!;
      const third = (await rollKey(store, record.id, 3_600))!;
      expect(await store.findByDigest(keyDigest(first))).toBeNull();
      expect((await store.findByDigest(keyDigest(second.apiKey)))?.id).toBe(record.id);
      expect((await store.findByDigest(keyDigest(third.apiKey)))?.id).toBe(record.id);
    });

    test('a grace of 0 revokes the old secret at once; a grace that ended, too', async () => {
      const { apiKey: leaked, record } = await issueKey(store, request());
      const rolled = (await rollKey(store, record.id, 0))!;
      expect(rolled.record.previousDigest).toBeNull();
      expect(await store.findByDigest(keyDigest(leaked))).toBeNull();

      const { apiKey: old, record: other } = await issueKey(store, request());
      await rollKey(store, other.id, 1);
      expect((await store.findByDigest(keyDigest(old)))?.id).toBe(other.id);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect(await store.findByDigest(keyDigest(old))).toBeNull();
    });

    test('a revoked key cannot be rolled; an unknown one is null', async () => {
      const { record } = await issueKey(store, request());
      await store.update(record.id, { revokedAt: new Date().toISOString() });
      await expect(rollKey(store, record.id, 60)).rejects.toBeInstanceOf(KeyRevokedError);
      expect(await rollKey(store, 'key_nope', 60)).toBeNull();
      expect(await rollKey(store, keyDigest(generateApiKey()), 60)).toBeNull();
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
