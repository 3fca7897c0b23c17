import { EmbeddedKeyStore } from '../../../services/gateway/src/keys/embedded-key-store';
import {
  OAUTH_INDEXES,
  asRecord,
  consumeFilter,
  liveFilter,
  upsertDocument,
} from '../../../services/gateway/src/oauth/mongo-oauth-store';
import { AlreadyConsumedError } from '../../../services/gateway/src/oauth/oauth-store';
import { tempDataDir } from '../../support/services';

describe('the OAuth records in keys.db', () => {
  const dataDir = tempDataDir();
  const stores = [new EmbeddedKeyStore(dataDir), new EmbeddedKeyStore(dataDir)];
  const [one, other] = stores.map((store) => store.oauth) as [
    EmbeddedKeyStore['oauth'],
    EmbeddedKeyStore['oauth'],
  ];
  afterAll(async () => {
    for (const store of stores) await store.close();
  });

  test('a record written by one process is read by another, by id and by uid', async () => {
    await one.upsert('Session', 's1', { uid: 'u1', accountId: 'a' }, Date.now() + 60_000, {
      uid: 'u1',
    });
    expect(await other.find('Session', 's1')).toEqual({
      id: 's1',
      payload: { uid: 'u1', accountId: 'a' },
    });
    expect((await other.findBy('Session', 'uid', 'u1'))?.id).toBe('s1');
    expect(await other.find('Grant', 's1')).toBeNull();
  });

  test('an expired record is gone', async () => {
    await one.upsert('AccessToken', 'old', { exp: 1 }, Date.now() - 1, {});
    expect(await other.find('AccessToken', 'old')).toBeNull();
  });

  test('a code is consumed once, even from two processes', async () => {
    await one.upsert('AuthorizationCode', 'c1', { grantId: 'g1' }, Date.now() + 60_000, {
      grantId: 'g1',
    });
    const results = await Promise.allSettled([
      one.consume('AuthorizationCode', 'c1'),
      other.consume('AuthorizationCode', 'c1'),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(AlreadyConsumedError);
    const found = await one.find('AuthorizationCode', 'c1');
    expect(typeof found!.payload.consumed).toBe('number');
  });

  test("revoking a grant destroys its records, and no one else's", async () => {
    for (const id of ['t1', 't2']) {
      await one.upsert('AccessToken', id, {}, Date.now() + 60_000, { grantId: 'g2' });
    }
    await one.upsert('AccessToken', 't3', {}, Date.now() + 60_000, { grantId: 'g3' });
    await other.revokeByGrantId('g2');
    expect(await one.find('AccessToken', 't1')).toBeNull();
    expect(await one.find('AccessToken', 't2')).toBeNull();
    expect(await one.find('AccessToken', 't3')).not.toBeNull();
  });

  test('all of a model, oldest first; destroy removes one', async () => {
    await one.upsert('SigningKey', 'k1', { n: 1 }, null, {});
    await one.upsert('SigningKey', 'k2', { n: 2 }, null, {});
    expect((await other.all('SigningKey')).map((r) => r.id)).toEqual(['k1', 'k2']);
    await other.destroy('SigningKey', 'k1');
    expect((await one.all('SigningKey')).map((r) => r.id)).toEqual(['k2']);
  });
});

describe('the OAuth records on MongoDB: the documents', () => {
  const now = new Date('2026-01-01T00:00:00Z');

  test('an upsert sets what it is given and unsets what it is not', () => {
    expect(upsertDocument('Grant', 'g', { a: 1 }, 5_000, { uid: 'u' }, now)).toEqual({
      $set: { model: 'Grant', id: 'g', payload: { a: 1 }, uid: 'u', expiresAt: new Date(5_000) },
      $unset: { grantId: '', userCode: '' },
      $setOnInsert: { createdAt: now },
    });
    expect(upsertDocument('SigningKey', 'k', {}, null, {}, now).$unset).toEqual({
      grantId: '',
      uid: '',
      userCode: '',
      expiresAt: '',
    });
  });

  test('reads skip what expired before the TTL monitor took it; a code is consumed once', () => {
    expect(liveFilter({ _id: 'Grant:g' }, now)).toEqual({
      _id: 'Grant:g',
      $or: [{ expiresAt: { $exists: false } }, { expiresAt: { $gt: now } }],
    });
    expect(consumeFilter('AuthorizationCode', 'c')).toEqual({
      _id: 'AuthorizationCode:c',
      consumedAt: { $exists: false },
    });
    expect(OAUTH_INDEXES[0]).toEqual({
      key: { expiresAt: 1 },
      name: 'expiry_ttl',
      expireAfterSeconds: 0,
    });
  });

  test('a consumed record reads as oidc-provider wrote it, with `consumed`', () => {
    expect(
      asRecord({
        _id: 'AuthorizationCode:c',
        model: 'AuthorizationCode',
        id: 'c',
        payload: { grantId: 'g' },
        consumedAt: new Date(2_000),
        createdAt: now,
      }),
    ).toEqual({ id: 'c', payload: { grantId: 'g', consumed: 2 } });
  });
});
