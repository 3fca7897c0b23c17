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
  };
  await store.create(record);
  return { apiKey, record };
}
