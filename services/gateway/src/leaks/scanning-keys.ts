import { type KeyObject, createPublicKey, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';

/**
 * The public keys of secret-scanning providers, in the format GitHub publishes them
 * (`{"public_keys": [{"key_identifier", "key": "<PEM>", "is_current"}]}`), read from the file that
 * SECRET_SCANNING_PUBLIC_KEYS names. A report signed by an identifier the file does not hold makes
 * it read again (at most every RELOAD_MS), so a key rotated into a mounted file is taken without a
 * restart and a flood of made-up identifiers costs no more than one read per interval.
 */
const RELOAD_MS = 10_000;

export class ScanningKeys {
  private keys: Map<string, KeyObject>;
  private readAt: number;

  /** Reads the file now: a file that cannot be read or holds no key fails the start. */
  constructor(
    readonly file: string,
    private readonly clock: () => number = Date.now,
  ) {
    this.keys = readScanningKeys(file);
    this.readAt = clock();
  }

  /**
   * Whether `signature` (base64 of a DER ECDSA signature) over `body` verifies with the key named
   * `identifier`: P-256 with SHA-256, as the provider signs.
   */
  verifies(body: Buffer, identifier: string, signature: string): boolean {
    const key = this.key(identifier);
    if (key === undefined || signature === '') return false;
    try {
      return verify('sha256', body, key, Buffer.from(signature, 'base64'));
    } catch {
      // Not a DER signature at all.
      return false;
    }
  }

  private key(identifier: string): KeyObject | undefined {
    const known = this.keys.get(identifier);
    if (known !== undefined || this.clock() - this.readAt < RELOAD_MS) return known;
    this.readAt = this.clock();
    try {
      this.keys = readScanningKeys(this.file);
    } catch {
      // A file being replaced: keep the keys read before.
    }
    return this.keys.get(identifier);
  }
}

/** The keys of the file by identifier; throws naming what is wrong with it. */
export function readScanningKeys(file: string): Map<string, KeyObject> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`SECRET_SCANNING_PUBLIC_KEYS: ${file} is not a readable JSON file`, {
      cause: err,
    });
  }
  const entries = (parsed as { public_keys?: unknown }).public_keys;
  if (!Array.isArray(entries) || entries.length === 0) {
    throw new Error(`SECRET_SCANNING_PUBLIC_KEYS: ${file} holds no "public_keys"`);
  }
  const keys = new Map<string, KeyObject>();
  for (const entry of entries as { key_identifier?: unknown; key?: unknown }[]) {
    if (typeof entry.key_identifier !== 'string' || typeof entry.key !== 'string') {
      throw new Error(
        `SECRET_SCANNING_PUBLIC_KEYS: an entry of ${file} lacks key_identifier or key`,
      );
    }
    keys.set(entry.key_identifier, createPublicKey(entry.key));
  }
  return keys;
}
