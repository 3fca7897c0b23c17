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

/**
 * Where API keys live: MongoDB when configured, else a file under DATA_DIR. The gateway and
 * `npm run keys` use the same store, so a key made by either is seen by both.
 */
export interface KeyStore {
  readonly kind: 'file' | 'mongodb';
  /** Adds a key; rejects with EmailTakenError if an active key has the same email (any case). */
  create(record: KeyRecord): Promise<void>;
  findByDigest(digest: string): Promise<KeyRecord | null>;
  /** By key id or digest. */
  find(idOrDigest: string): Promise<KeyRecord | null>;
  list(): Promise<KeyRecord[]>;
  update(
    id: string,
    patch: Partial<Pick<KeyRecord, 'tier' | 'revokedAt'>>,
  ): Promise<KeyRecord | null>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
