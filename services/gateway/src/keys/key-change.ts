import type { ChangeFeed } from '../../../shared/change-feed/change-feed';
import type { KeyRecord } from './key-store';

/**
 * A key change as the change feed's `keys` topic carries it: the key, whose every cached secret
 * is stale, and its current secret's digest, which a cache may hold as "no such key".
 */
export interface KeyChange {
  keyId: string;
  digest: string;
}

export function decodeKeyChange(message: string): KeyChange | undefined {
  try {
    const { keyId, digest } = JSON.parse(message) as Partial<KeyChange>;
    return typeof keyId === 'string' && typeof digest === 'string' ? { keyId, digest } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Announces a stored key change to every process: the gateways (`keys`) and the catalog, whose
 * webhooks deliver only to active Enterprise keys (`key-status`). Rejects when the feed cannot
 * carry it; the change is stored, and every gateway reads it from the key store within a second.
 */
export async function announceKeyChange(feed: ChangeFeed, record: KeyRecord): Promise<void> {
  const { id: keyId, digest, tier, revokedAt } = record;
  await feed.publish('keys', JSON.stringify({ keyId, digest } satisfies KeyChange));
  await feed.publish('key-status', JSON.stringify({ keyId, tier, revoked: revokedAt !== null }));
}
