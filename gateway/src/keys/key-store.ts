import type { Tier } from '../../../services/shared/tiers';

/**
 * A key as stored: never its secrets, only their digests. A key is an id with one current secret
 * and, after a roll, at most one previous secret that works until its grace period ends; quota
 * and webhook subscriptions belong to the id, so a roll keeps them.
 */
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
  /** The secret before the last roll, working until `previousExpiresAt`; null when none. */
  previousDigest: string | null;
  previousExpiresAt: string | null;
}

/** The longest grace period of a rolled secret: a week. */
export const MAX_GRACE_SECONDS = 604_800;
/** The grace period when none is asked for: a day. */
export const DEFAULT_GRACE_SECONDS = 86_400;

export class EmailTakenError extends Error {
  override name = 'EmailTakenError';
}

/** A revoked key stays revoked: it cannot be given another tier or a new secret. */
export class KeyRevokedError extends Error {
  override name = 'KeyRevokedError';
  constructor(keyId: string) {
    super(`Key ${keyId} is revoked; a revoked key cannot change tier or be rolled`);
  }
}

/** A roll: the new secret's digest, and until when the current one keeps working (now: never). */
export interface KeyRoll {
  digest: string;
  previousExpiresAt: string;
  now: string;
}

/**
 * What changed in the key store since a cursor: the ids of keys created, revoked, re-tiered or
 * rolled after it and the digests of their current secrets, in no particular order, or `missed`
 * when the store no longer remembers that far back (then every cached key may be stale).
 * `cursor` is where the next call starts.
 */
export type KeyChanges =
  | { cursor: string; keyIds: string[]; digests: string[]; missed?: false }
  | { cursor: string; missed: true };

/**
 * Where API keys live: MongoDB when configured, else SQLite under DATA_DIR. The gateway and
 * `npm run keys` use the same store, so a key made by either is seen by both.
 */
export interface KeyStore {
  readonly kind: 'embedded' | 'mongodb';
  /** Adds a key; rejects with EmailTakenError if an active key has the same email (any case). */
  create(record: KeyRecord): Promise<void>;
  /** By a secret's digest: the current one, or the previous one while its grace lasts. */
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
   * Gives the key a new current secret; the current one becomes the previous one until
   * `previousExpiresAt` (none when that is `now`), and a previous one is dropped at once. Null
   * when no key has this id or digest; rejects with KeyRevokedError for a revoked key.
   */
  roll(idOrDigest: string, roll: KeyRoll): Promise<KeyRecord | null>;
  /**
   * The store's own log of key changes, which every gateway polls: a change reaches every replica
   * from the store itself, whatever happened to its announcement on the change feed. Without a
   * cursor: where the log stands now, and no change.
   */
  changesSince(cursor?: string): Promise<KeyChanges>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
