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
  ping(): Promise<void>;
  close(): Promise<void>;
}
