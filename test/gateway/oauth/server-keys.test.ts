import { EmbeddedKeyStore } from '../../../services/gateway/src/keys/embedded-key-store';
import { serverKeys } from '../../../services/gateway/src/oauth/server-keys';
import { tempDataDir } from '../../support/services';

const DAY_MS = 86_400_000;

describe("the authorization server's signing and cookie keys", () => {
  test('made once and shared: a second replica signs with the same key', async () => {
    const dataDir = tempDataDir();
    const [a, b] = [new EmbeddedKeyStore(dataDir), new EmbeddedKeyStore(dataDir)];
    const first = await serverKeys(a.oauth);
    const second = await serverKeys(b.oauth);
    expect(first.jwks.keys).toHaveLength(1);
    expect(second.jwks.keys.map((k) => k.kid)).toEqual(first.jwks.keys.map((k) => k.kid));
    expect(second.cookieKeys).toEqual(first.cookieKeys);
    expect(first.jwks.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    await a.close();
    await b.close();
  });

  test('rotated once the newest is 30 days old: the new one first, the old one still kept', async () => {
    const store = new EmbeddedKeyStore(tempDataDir());
    const old = Date.now() - 31 * DAY_MS;
    await store.oauth.upsert(
      'SigningKey',
      'old',
      { createdAt: old, jwk: { kid: 'old-kid' } },
      Date.now() + DAY_MS,
      {},
    );
    await store.oauth.upsert(
      'CookieKey',
      'old',
      { createdAt: old, secret: 'old-secret' },
      null,
      {},
    );
    const { jwks, cookieKeys } = await serverKeys(store.oauth);
    expect(jwks.keys.map((k) => k.kid)).toEqual([
      expect.not.stringMatching(/^old-kid$/),
      'old-kid',
    ]);
    expect(cookieKeys).toEqual([expect.not.stringMatching(/^old-secret$/), 'old-secret']);
    await store.close();
  });
});
