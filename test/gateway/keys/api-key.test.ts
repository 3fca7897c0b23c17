import {
  KEY_PREFIX,
  KeyDigests,
  generateApiKey,
  generateKeyId,
  isWellFormedKey,
  keyDigest,
} from '../../../services/gateway/src/keys/api-key';

describe('API key format (docs/api.md#api-keys-and-registration)', () => {
  test('tdk_ + 32 random base62 characters + a 6-character checksum', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^tdk_[0-9A-Za-z]{38}$/);
    expect(isWellFormedKey(key)).toBe(true);
  });

  test('keys do not repeat and use the whole alphabet', () => {
    const keys = Array.from({ length: 2_000 }, generateApiKey);
    expect(new Set(keys).size).toBe(keys.length);
    const alphabet = new Set(
      keys.flatMap((k) => [...k.slice(KEY_PREFIX.length, KEY_PREFIX.length + 32)]),
    );
    expect(alphabet.size).toBe(62);
  });

  test('a changed character, a wrong prefix or a wrong length fails the checksum or shape', () => {
    const key = generateApiKey();
    const flipped = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11);
    expect(isWellFormedKey(flipped)).toBe(false);
    expect(isWellFormedKey(`xyz_${key.slice(4)}`)).toBe(false);
    expect(isWellFormedKey(key.slice(0, -1))).toBe(false);
    expect(isWellFormedKey(`${key}0`)).toBe(false);
    expect(isWellFormedKey('')).toBe(false);
  });

  test('only a SHA-256 digest is derived for storage; ids are public and distinct', () => {
    const key = generateApiKey();
    expect(keyDigest(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(keyDigest(key)).not.toContain(key.slice(4));
    expect(generateKeyId()).toMatch(/^key_[0-9A-Za-z]{16}$/);
    expect(generateKeyId()).not.toBe(generateKeyId());
  });

  test('KeyDigests: the digest of a well-formed key, also once forgotten; nothing for any other', () => {
    const digests = new KeyDigests(2);
    const keys = [generateApiKey(), generateApiKey(), generateApiKey()];
    // Asked twice each, round after round, with one key more than it keeps.
    for (let round = 0; round < 3; round++) {
      for (const key of keys) {
        expect(digests.of(key)).toBe(keyDigest(key));
        expect(digests.of(key)).toBe(keyDigest(key));
      }
    }
    const key = keys[0]!;
    const flipped = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11);
    // Malformed, and still malformed when asked again (never remembered as a key).
    for (const bad of [flipped, flipped, '', `${key}0`, key.toUpperCase()]) {
      expect(digests.of(bad)).toBeUndefined();
    }
  });
});
