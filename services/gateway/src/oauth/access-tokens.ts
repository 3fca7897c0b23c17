import { Lru } from 'toad-cache';
import { SCOPES, type Scope } from '../../../shared/contract';
import type { OAuthStore } from './oauth-store';

/** What an access token lets its bearer do: act for the secret with this digest, in these scopes. */
export interface TokenGrant {
  /** The digest of the API key secret the person signed in with. */
  digest: string;
  scopes: readonly Scope[];
  /** Seconds since the epoch. */
  expiresAt: number;
}

/**
 * How long a replica trusts what it read of a token: a token revoked (RFC 7009) on any replica
 * stops working everywhere within it. The key behind it follows the key cache, which hears of
 * key changes on the change feed within the same second.
 */
const TRUSTED_MS = 1_000;

interface Entry {
  grant: TokenGrant | null;
  until: number;
}

function isScope(scope: string): scope is Scope {
  return (SCOPES as readonly string[]).includes(scope);
}

/**
 * The bearer tokens of the MCP endpoint: opaque access tokens the authorization server keeps in
 * the key store, each read at most once a second per replica. A token is good while it exists,
 * has not expired and was issued for one of the `audiences`.
 */
export class AccessTokens {
  private readonly cache = new Lru<Entry>(10_000);
  private readonly pending = new Map<string, Promise<TokenGrant | null>>();

  constructor(
    private readonly store: OAuthStore,
    private readonly audiences: readonly string[],
  ) {}

  grantOf(token: string): TokenGrant | null | Promise<TokenGrant | null> {
    const now = Date.now();
    const entry = this.cache.get(token);
    if (entry !== undefined && entry.until > now) return usable(entry.grant, now);
    let reading = this.pending.get(token);
    if (reading === undefined) {
      reading = this.read(token).finally(() => this.pending.delete(token));
      this.pending.set(token, reading);
    }
    return reading.then((grant) => usable(grant, Date.now()));
  }

  private async read(token: string): Promise<TokenGrant | null> {
    const found = await this.store.find('AccessToken', token);
    const payload = found?.payload;
    let grant: TokenGrant | null = null;
    if (payload && typeof payload.accountId === 'string' && typeof payload.exp === 'number') {
      const audience = ([] as unknown[]).concat(payload.aud ?? []);
      if (audience.some((aud) => typeof aud === 'string' && this.audiences.includes(aud))) {
        const scopes = String(payload.scope ?? '')
          .split(' ')
          .filter(isScope);
        grant = { digest: payload.accountId, scopes, expiresAt: payload.exp };
      }
    }
    this.cache.set(token, { grant, until: Date.now() + TRUSTED_MS });
    return grant;
  }
}

function usable(grant: TokenGrant | null, now: number): TokenGrant | null {
  return grant !== null && grant.expiresAt * 1000 > now ? grant : null;
}
