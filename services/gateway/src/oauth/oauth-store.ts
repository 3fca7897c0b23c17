/**
 * What the authorization server keeps (docs/security.md, "Agents signed in with OAuth"): the
 * records of oidc-provider's models (registered clients, grants, authorization codes, access and
 * refresh tokens, interactions, sessions) and the server's own signing and cookie keys, in the
 * key store's database (keys.db, or the key store's MongoDB), so every gateway replica shares
 * them. The adapter over it is oauth-adapter.ts.
 */

/** A record of a model: its payload as oidc-provider wrote it. */
export interface OAuthRecord {
  id: string;
  payload: Record<string, unknown>;
}

/** What a record may be looked up by, besides its id. */
export interface OAuthRefs {
  grantId?: string | undefined;
  uid?: string | undefined;
  userCode?: string | undefined;
}

/** A second consumption of a one-time record (an authorization code used twice). */
export class AlreadyConsumedError extends Error {
  override name = 'AlreadyConsumedError';
}

export interface OAuthStore {
  /** Creates or replaces a record; `expiresAt` (ms since the epoch) null: kept until destroyed. */
  upsert(
    model: string,
    id: string,
    payload: Record<string, unknown>,
    expiresAt: number | null,
    refs: OAuthRefs,
  ): Promise<void>;
  /** The record, unless it expired or never was. */
  find(model: string, id: string): Promise<OAuthRecord | null>;
  findBy(model: string, ref: 'uid' | 'userCode', value: string): Promise<OAuthRecord | null>;
  /**
   * Marks a one-time record used, at once for every replica: the second of two concurrent
   * consumptions is refused with AlreadyConsumedError.
   */
  consume(model: string, id: string): Promise<void>;
  destroy(model: string, id: string): Promise<void>;
  /** Destroys every record of a grant (its codes and tokens): the grant was revoked. */
  revokeByGrantId(grantId: string): Promise<void>;
  /** Every live record of a model (the server's keys), oldest first. */
  all(model: string): Promise<OAuthRecord[]>;
}
