import { hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { Lru } from 'toad-cache';

/**
 * API key format (docs/security.md#the-secret-format-for-secret-scanners), GitHub style: `tdk_` +
 * 32 random base62 characters (190 bits) + 6 base62 characters of the CRC-32 of everything before
 * them. The checksum lets the gateway refuse a mistyped or made-up key before any lookup, and
 * lets secret scanners recognise our keys. Secrets issued before the checksum covered the prefix
 * carry the CRC-32 of the random part alone; they keep working until rolled.
 */
export const KEY_PREFIX = 'tdk_';
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_SHAPE = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);

/** Uniform base62 characters: bytes >= 248 are dropped, so no character is favoured. */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

function base62(value: number, width: number): string {
  let out = '';
  let rest = value;
  for (let i = 0; i < width; i++) {
    out = ALPHABET[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

function checksum(text: string): string {
  return base62(crc32(text), CHECKSUM_LENGTH);
}

export function generateApiKey(): string {
  const body = `${KEY_PREFIX}${randomBase62(RANDOM_LENGTH)}`;
  return `${body}${checksum(body)}`;
}

/** True when the key has our shape and its checksum (or an earlier secret's) holds. */
export function isWellFormedKey(key: string): boolean {
  if (!KEY_SHAPE.test(key)) return false;
  const body = key.slice(0, KEY_PREFIX.length + RANDOM_LENGTH);
  const sum = key.slice(body.length);
  return sum === checksum(body) || sum === checksum(body.slice(KEY_PREFIX.length));
}

/**
 * Keys are stored and looked up by SHA-256 only; a 190-bit random key needs no slow hash. Once
 * per request: the one-shot hash costs a third of a Hash object's.
 */
export function keyDigest(key: string): string {
  return hash('sha256', key, 'hex');
}

/**
 * The gateway's check of a presented key: its digest when it is well formed, else undefined.
 * The keys of recent requests are remembered with their digests, so a key sent again is neither
 * checked nor hashed again, a cost on every request (docs/performance.md#current-figures). Only
 * well-formed keys are kept, and the least recently seen go first, so made-up keys cost what they
 * did before and push out only keys that would simply be hashed again. The keys stay in this
 * process's memory, where every request's headers hold them anyway; nothing is stored.
 */
export class KeyDigests {
  private readonly recent: Lru<string>;

  constructor(capacity = 10_000) {
    this.recent = new Lru<string>(capacity);
  }

  of(key: string): string | undefined {
    const known = this.recent.get(key);
    if (known !== undefined) return known;
    if (!isWellFormedKey(key)) return undefined;
    const digest = keyDigest(key);
    this.recent.set(key, digest);
    return digest;
  }
}

/** Public identifier of a key, safe to show in lists, logs and metrics. */
export function generateKeyId(): string {
  return `key_${randomBase62(16)}`;
}
