import type { Tier } from '../../../services/shared/tiers';

/** A key as stored: never the key itself, only its digest. */
export interface KeyRecord {
  id: string;
  digest: string;
  tier: Tier;
  email: string;
  name: string;
  useCase: string;
  createdAt: string;
  updatedAt: string;
  revokedAt: string | null;
}

export class EmailTakenError extends Error {
  override name = 'EmailTakenError';
}

/** A revoked key stays revoked: it cannot be given another tier. */
export class KeyRevokedError extends Error {
  override name = 'KeyRevokedError';
  constructor(keyId: string) {
    super(`Key ${keyId} is revoked; a revoked key cannot change tier`);
  }
}

/**
 * What changed in the key store since a cursor: the digests of keys created, revoked or
 * re-tiered after it, in no particular order, or `missed` when the store no longer remembers that
 * far back (then every cached key may be stale). `cursor` is where the next call starts.
 */
export type KeyChanges =
  { cursor: string; digests: string[]; missed?: false } | { cursor: string; missed: true };

/**
 * Where API keys live: MongoDB when configured, else SQLite under DATA_DIR. The gateway and
 * `npm run keys` use the same store, so a key made by either is seen by both.
 */
export interface KeyStore {
  readonly kind: 'embedded' | 'mongodb';
  /** Adds a key; rejects with EmailTakenError if an active key has the same email (any case). */
  create(record: KeyRecord): Promise<void>;
  findByDigest(digest: string): Promise<KeyRecord | null>;
  /** By key id or digest. */
  find(idOrDigest: string): Promise<KeyRecord | null>;
  list(): Promise<KeyRecord[]>;
  /** Rejects with KeyRevokedError when a tier is given for a revoked key. */
  update(
    id: string,
    patch: Partial<Pick<KeyRecord, 'tier' | 'revokedAt'>>,
  ): Promise<KeyRecord | null>;
  /**
   * The store's own log of key changes, which every gateway polls: a change reaches every replica
   * from the store itself, whatever happened to its announcement on the change feed. Without a
   * cursor: where the log stands now, and no digests.
   */
  changesSince(cursor?: string): Promise<KeyChanges>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
