import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import type { OAuthStore } from './oauth-store';

/** A key is made anew once the newest is this old; replicas take it up at their next start. */
const ROTATE_AFTER_MS = 30 * 24 * 60 * 60 * 1000;
/** Old keys stay usable (verification, older cookies) for two more rotations. */
const KEPT_MS = 3 * ROTATE_AFTER_MS;

interface StoredKey {
  createdAt: number;
}

/**
 * The newest keys of a kind, made when there are none or the newest is due for rotation. Kept in
 * the key store, so every replica signs with the same keys and reads the others' cookies.
 * Replicas that start at once may each make one: both are kept, the newest used first.
 */
async function rotated<T extends StoredKey>(
  store: OAuthStore,
  model: string,
  make: () => T,
  now = Date.now(),
): Promise<T[]> {
  let keys = (await store.all(model)).map((record) => record.payload as unknown as T);
  if (keys.length === 0 || now - keys.at(-1)!.createdAt >= ROTATE_AFTER_MS) {
    const key = make();
    await store.upsert(
      model,
      randomUUID(),
      { ...key } as Record<string, unknown>,
      now + KEPT_MS,
      {},
    );
    keys = [...keys, key];
  }
  return keys.reverse();
}

interface SigningKey extends StoredKey {
  jwk: Record<string, unknown>;
}

interface CookieKey extends StoredKey {
  secret: string;
}

/**
 * The authorization server's signing keys (a JWKS, newest first: it signs with the first) and
 * cookie keys (newest first: it signs with the first and accepts all), rotated every 30 days.
 */
export async function serverKeys(store: OAuthStore) {
  const signing = await rotated<SigningKey>(store, 'SigningKey', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = privateKey.export({ format: 'jwk' }) as Record<string, unknown>;
    return { createdAt: Date.now(), jwk: { ...jwk, kid: randomUUID(), alg: 'ES256', use: 'sig' } };
  });
  const cookies = await rotated<CookieKey>(store, 'CookieKey', () => ({
    createdAt: Date.now(),
    secret: randomBytes(32).toString('base64url'),
  }));
  return {
    jwks: { keys: signing.map((key) => key.jwk) },
    cookieKeys: cookies.map((key) => key.secret),
  };
}
