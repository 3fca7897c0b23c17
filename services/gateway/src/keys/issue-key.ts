import type { Scope } from '../../../shared/contract';
import type { Tier } from '../../../shared/tiers';
import { generateApiKey, generateKeyId, keyDigest } from './api-key';
import { type KeyActor, type KeyRecord, type KeyStore, OPERATOR } from './key-store';

export interface KeyRequest {
  tier: Tier;
  email: string;
  name: string;
  useCase: string;
  /** When every secret of the key stops working (ISO 8601); null or left out: never. */
  expiresAt?: string | null;
  /** Restrictions an operator sets (docs/api.md, "Restricted keys"); null: none. */
  scopes?: Scope[] | null;
  allowedAddresses?: string[] | null;
}

export interface IssueOptions {
  actor?: KeyActor;
  /** KEY_MAX_LIFETIME_DAYS: no new secret lives longer; unset: no cap. */
  maxLifetimeDays?: number;
  now?: Date;
}

/**
 * A new secret's end: the one asked for, no later than `maxLifetimeDays` from now. Undefined when
 * neither says one (a roll then keeps the key's end).
 */
export function secretEnd(
  asked: string | null | undefined,
  now: Date,
  maxLifetimeDays: number | undefined,
): string | null | undefined {
  if (maxLifetimeDays === undefined) return asked;
  const cap = new Date(now.getTime() + maxLifetimeDays * 86_400_000).toISOString();
  return asked === null || asked === undefined || asked > cap ? cap : asked;
}

/**
 * Makes a new key and stores its record (digest only). The key itself is returned once, for
 * the caller to show; it exists nowhere else. Rejects with EmailTakenError like the store.
 */
export async function issueKey(
  store: KeyStore,
  { tier, email, name, useCase, expiresAt, scopes = null, allowedAddresses = null }: KeyRequest,
  { actor = OPERATOR, maxLifetimeDays, now = new Date() }: IssueOptions = {},
): Promise<{ apiKey: string; record: KeyRecord }> {
  const apiKey = generateApiKey();
  const at = now.toISOString();
  const record: KeyRecord = {
    id: generateKeyId(),
    digest: keyDigest(apiKey),
    tier,
    email,
    name,
    useCase,
    createdAt: at,
    updatedAt: at,
    revokedAt: null,
    revokedReason: null,
    revokedUrl: null,
    expiresAt: secretEnd(expiresAt, now, maxLifetimeDays) ?? null,
    previousDigest: null,
    previousExpiresAt: null,
    scopes,
    allowedAddresses,
    lastUsedAt: null,
  };
  await store.create(record, actor);
  return { apiKey, record };
}

export interface RollOptions extends IssueOptions {
  /** The digest of the secret that asked: the roll happens only while it is current. */
  ifCurrent?: string;
  /** The new secret's life; left out, the key keeps its end (capped by `maxLifetimeDays`). */
  expiresInSeconds?: number;
}

/**
 * Rolls a key: a new secret for the same key id, tier, quota, restrictions and webhook
 * subscriptions, returned once; the current secret keeps working for `graceSeconds` (0: not at
 * all), and a previous one still in its grace stops at once. Null when no key matches; rejects
 * with KeyRevokedError and KeyChangedError.
 */
export async function rollKey(
  store: KeyStore,
  idOrDigest: string,
  graceSeconds: number,
  {
    now = new Date(),
    ifCurrent,
    expiresInSeconds,
    maxLifetimeDays,
    actor = OPERATOR,
  }: RollOptions = {},
): Promise<{ apiKey: string; record: KeyRecord; previousKeyExpiresAt: string } | null> {
  const apiKey = generateApiKey();
  const previousKeyExpiresAt = new Date(now.getTime() + graceSeconds * 1000).toISOString();
  const asked =
    expiresInSeconds === undefined
      ? undefined
      : new Date(now.getTime() + expiresInSeconds * 1000).toISOString();
  const expiresAt = secretEnd(asked, now, maxLifetimeDays);
  const record = await store.roll(
    idOrDigest,
    {
      digest: keyDigest(apiKey),
      previousExpiresAt: previousKeyExpiresAt,
      now: now.toISOString(),
      ...(ifCurrent !== undefined && { ifCurrent }),
      ...(expiresAt !== undefined && { expiresAt }),
    },
    actor,
  );
  return record && { apiKey, record, previousKeyExpiresAt };
}
