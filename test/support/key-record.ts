import type { KeyRecord } from '../../services/gateway/src/keys/key-store';

let sequence = 0;

/**
 * A key record as the store holds it, for tests that write or judge records directly: an active,
 * unrestricted Free key with no previous secret and no end, unique by its sequence, with what the
 * test sets over it.
 */
export function keyRecord(overrides: Partial<KeyRecord> = {}): KeyRecord {
  sequence += 1;
  const at = overrides.createdAt ?? new Date().toISOString();
  return {
    id: `key_test${process.pid}x${sequence}`,
    digest: `digest_${process.pid}_${sequence}`,
    tier: 'free',
    email: `user${process.pid}-${sequence}@example.com`,
    name: 'User',
    useCase: '',
    createdAt: at,
    updatedAt: at,
    revokedAt: null,
    revokedReason: null,
    revokedUrl: null,
    expiresAt: null,
    previousDigest: null,
    previousExpiresAt: null,
    scopes: null,
    allowedAddresses: null,
    lastUsedAt: null,
    ...overrides,
  };
}
