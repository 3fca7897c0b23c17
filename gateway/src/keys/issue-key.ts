import type { Tier } from '../../../services/shared/tiers';
import { generateApiKey, generateKeyId, keyDigest } from './api-key';
import type { KeyRecord, KeyStore } from './key-store';

export interface KeyRequest {
  tier: Tier;
  email: string;
  name: string;
  useCase: string;
}

/**
 * Makes a new key and stores its record (digest only). The key itself is returned once, for
 * the caller to show; it exists nowhere else. Rejects with EmailTakenError like the store.
 */
export async function issueKey(
  store: KeyStore,
  { tier, email, name, useCase }: KeyRequest,
): Promise<{ apiKey: string; record: KeyRecord }> {
  const apiKey = generateApiKey();
  const now = new Date().toISOString();
  const record: KeyRecord = {
    id: generateKeyId(),
    digest: keyDigest(apiKey),
    tier,
    email,
    name,
    useCase,
    createdAt: now,
    updatedAt: now,
    revokedAt: null,
    revokedReason: null,
    revokedUrl: null,
    expiresAt: null,
    previousDigest: null,
    previousExpiresAt: null,
  };
  await store.create(record);
  return { apiKey, record };
}

/**
 * Rolls a key: a new secret for the same key id, tier, quota and webhook subscriptions, returned
 * once; the current secret keeps working for `graceSeconds` (0: not at all), and a previous one
 * still in its grace stops at once. With `ifCurrent` (the digest of the secret that asked), only
 * while that is still the current secret. Null when no key matches; rejects with KeyRevokedError
 * and KeyChangedError.
 */
export async function rollKey(
  store: KeyStore,
  idOrDigest: string,
  graceSeconds: number,
  { now = new Date(), ifCurrent }: { now?: Date; ifCurrent?: string } = {},
): Promise<{ apiKey: string; record: KeyRecord; previousKeyExpiresAt: string } | null> {
  const apiKey = generateApiKey();
  const previousKeyExpiresAt = new Date(now.getTime() + graceSeconds * 1000).toISOString();
  const record = await store.roll(idOrDigest, {
    digest: keyDigest(apiKey),
    previousExpiresAt: previousKeyExpiresAt,
    now: now.toISOString(),
    ...(ifCurrent === undefined ? {} : { ifCurrent }),
  });
  return record && { apiKey, record, previousKeyExpiresAt };
}
