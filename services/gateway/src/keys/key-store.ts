import type { Scope } from '../../../shared/contract';
import type { Tier } from '../../../shared/tiers';
import type { OAuthStore } from '../oauth/oauth-store';
import type { SearchAnalyticsStore } from '../analytics/search-analytics-store';

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
  /** Why it was revoked: `leaked` when a leak report ended it (its URL in `revokedUrl`). */
  revokedReason: RevocationReason | null;
  /** Where a reported leak was found; null for any other revocation. */
  revokedUrl: string | null;
  /** When every secret of the key stops working; null: never. */
  expiresAt: string | null;
  /** The secret before the last roll, working until `previousExpiresAt`; null when none. */
  previousDigest: string | null;
  previousExpiresAt: string | null;
  /** A restricted key's scopes; null: everything its tier allows. */
  scopes: Scope[] | null;
  /** The client addresses (IPs or CIDRs) a restricted key may be used from; null: any. */
  allowedAddresses: string[] | null;
  /** The minute of its last admitted request (written at most once a minute); null: never. */
  lastUsedAt: string | null;
}

/** Why a key was revoked: by its owner or an operator, or because its secret was reported leaked. */
export type RevocationReason = 'revoked' | 'leaked';

/** Why a secret stopped working (docs/security.md, "The lifecycle of a secret"). */
export type EndReason = RevocationReason | 'rolled' | 'expired';

/**
 * A secret of a key that no longer works and is no longer the key's current or previous one: kept
 * by digest so that presenting it is answered with what ended it, never as an unknown key.
 */
export interface EndedSecret {
  digest: string;
  reason: EndReason;
  at: string;
  url: string | null;
}

/** How many ended secrets a key remembers, newest first; older ones become unknown keys. */
export const ENDED_SECRETS_KEPT = 20;

/**
 * What the store knows of a presented secret: its key, and the ended secret it is when it is
 * neither the key's current nor its previous one.
 */
export interface SecretMatch {
  record: KeyRecord;
  ended: EndedSecret | null;
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

/**
 * A roll: the new secret's digest, and until when the current one keeps working (now: never).
 * `ifCurrent`: the roll happens only while this digest is still the key's current secret, so of
 * concurrent rolls from one secret exactly one wins (compare-and-set); operators roll without it.
 */
export interface KeyRoll {
  digest: string;
  previousExpiresAt: string;
  now: string;
  ifCurrent?: string;
  /** The key's new end (null: none); left out, the end stays as it was. */
  expiresAt?: string | null;
}

/** A roll lost to another change of the key: its `ifCurrent` was no longer the current secret. */
export class KeyChangedError extends Error {
  override name = 'KeyChangedError';
  constructor(keyId: string) {
    super(`Key ${keyId} changed meanwhile: the secret given is no longer its current one`);
  }
}

/**
 * A change of a key: a new tier, a revocation with its reason (and a leak's URL), or new
 * restrictions: scopes, allowed addresses, an end (null clears each).
 */
export type KeyPatch = Partial<
  Pick<
    KeyRecord,
    | 'tier'
    | 'revokedAt'
    | 'revokedReason'
    | 'revokedUrl'
    | 'scopes'
    | 'allowedAddresses'
    | 'expiresAt'
  >
>;

/** Who changed a key: its own (current) secret, an operator, or a leak report; and from where. */
export interface KeyActor {
  by: 'self' | 'operator' | 'leak_report';
  /** The client address of a request; null for the CLIs. */
  address: string | null;
}

export const OPERATOR: KeyActor = { by: 'operator', address: null };

export const KEY_EVENT_TYPES = [
  'created',
  'rolled',
  'tier_changed',
  'restricted',
  'expired',
  'revoked',
  'leak_reported',
  'authorized',
] as const;
export type KeyEventType = (typeof KEY_EVENT_TYPES)[number];

/** One change of a key, as `GET /v1/keys/events` lists it (docs/api.md#key-events-and-last-use). */
export interface KeyEvent extends KeyActor {
  type: KeyEventType;
  at: string;
  detail: Record<string, unknown>;
}

/** How long key events are kept. */
export const KEY_EVENTS_RETENTION_DAYS = 90;

/** The use of a key in a minute (ISO, seconds zero), for `recordUse`. */
export interface KeyUse {
  keyId: string;
  minute: string;
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
  /**
   * Adds a key; rejects with EmailTakenError if an active key has the same email (any case).
   * Every change records its event (`created`, `rolled`, …) with the actor, once.
   */
  create(record: KeyRecord, actor?: KeyActor): Promise<void>;
  /**
   * By a secret's digest, whatever its state: the key's current secret, its previous one (in its
   * grace or past it), or one of its ended secrets. The state itself is secretState's to say.
   */
  findByDigest(digest: string): Promise<SecretMatch | null>;
  /** By key id or digest. */
  find(idOrDigest: string): Promise<KeyRecord | null>;
  list(): Promise<KeyRecord[]>;
  /**
   * Rejects with KeyRevokedError when a tier is given for a revoked key. A revoked key stays
   * revoked with its first reason.
   */
  update(id: string, patch: KeyPatch, actor?: KeyActor): Promise<KeyRecord | null>;
  /**
   * Ends the key's previous secret now for `reason` (a reported leak), keeping it among the ended
   * secrets; the current one is untouched. Null when no key has this id or that previous digest.
   */
  endPreviousSecret(
    id: string,
    digest: string,
    reason: EndReason,
    url: string | null,
    actor?: KeyActor,
  ): Promise<KeyRecord | null>;
  /**
   * Gives the key a new current secret; the current one becomes the previous one until
   * `previousExpiresAt` (none when that is `now`), and a previous one ends at once; every secret
   * that ends is kept among the ended secrets as `rolled`. Null when no key has this id or digest;
   * rejects with KeyRevokedError for a revoked key and KeyChangedError when `ifCurrent` lost.
   */
  roll(idOrDigest: string, roll: KeyRoll, actor?: KeyActor): Promise<KeyRecord | null>;
  /**
   * Sets `lastUsedAt` to each use's minute where it is earlier: a write only for the first of
   * every replica to report a key's minute. Not a change of the key: no event, no change log. Resolves to the
   * number of keys it wrote.
   */
  recordUse(uses: readonly KeyUse[]): Promise<number>;
  /** The key's events since `since` (ISO), newest first. */
  events(keyId: string, since: string): Promise<KeyEvent[]>;
  /**
   * Records an event that is no change of the key itself: an agent the key's owner let act for
   * it (`authorized`, docs/security.md, "Agents signed in with OAuth").
   */
  recordEvent(keyId: string, event: KeyEvent): Promise<void>;
  /** The OAuth authorization server's records, in the same database. */
  readonly oauth: OAuthStore;
  /** Search analytics (SEARCH_ANALYTICS), in the same database. */
  readonly searches: SearchAnalyticsStore;
  /**
   * The store's own log of key changes, which every gateway polls: a change reaches every replica
   * from the store itself, whatever happened to its announcement on the change feed. Without a
   * cursor: where the log stands now, and no change.
   */
  changesSince(cursor?: string): Promise<KeyChanges>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
