import type { Tier } from './tiers';

/**
 * The contract between the gateway and the catalog, in one place: the catalog's public routes as
 * the gateway proxies them, the internal headers and paths they talk through, who the caller is,
 * and the topics of the change feed. Both services build on it; neither restates it.
 */

/**
 * What a restricted key may be allowed to do (docs/api.md, "Restricted keys"); every keyed route
 * declares the one it needs. A key without restrictions may do everything its tier allows.
 */
export const SCOPES = ['catalog:read', 'export', 'webhooks', 'usage', 'keys:roll'] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** One public route of the catalog, as the gateway proxies it (or mirrors it, MCP_ROUTE). */
export interface CatalogRoute {
  method: 'GET' | 'POST' | 'DELETE';
  /** The route template: metrics, logs and spans on both services carry it as `route`. */
  url: string;
  /**
   * The lowest tier that may call it (docs/api.md, "Tiers"): both services answer 403 below it,
   * the gateway before the body is read, the catalog again behind it.
   */
  tier: Tier;
  /** The scope a restricted key needs for it. */
  scope: Scope;
  /** Largest request body the gateway accepts for it; bodiless routes take none. */
  bodyLimit?: number;
  /**
   * Its answers are the same for every key of a tier and carry the catalog version: the catalog
   * keeps them in its response cache, and the gateway in its own.
   */
  cacheable?: true;
  /**
   * Units of the daily quota a request takes; 1 unless said. `per-operation`: the route takes
   * them by what the request asks (the MCP endpoint: one per tool call or resource read).
   */
  quotaCost?: 0 | 1 | 'per-operation';
}

const WEBHOOK_BODY_LIMIT = 16 * 1024;

/**
 * The catalog's public routes: one table, from which the gateway builds its proxy routes (method,
 * template, body limit, tier check before the body is read, cache) and the catalog its tier
 * checks and response cache. The catalog refuses to start with a `/v1` route the table lacks, and
 * a test holds it to serving every route of the table. Anything else under /v1 goes through the
 * gateway's catch-all and meets the catalog's 404.
 */
export const CATALOG_ROUTES: readonly CatalogRoute[] = [
  { method: 'GET', url: '/v1/tools', tier: 'free', scope: 'catalog:read', cacheable: true },
  { method: 'GET', url: '/v1/tools/:slug', tier: 'free', scope: 'catalog:read', cacheable: true },
  // A record's history changes only with the catalog's version, like the record.
  {
    method: 'GET',
    url: '/v1/tools/:slug/history',
    tier: 'free',
    scope: 'catalog:read',
    cacheable: true,
  },
  // Not cacheable: what the change log keeps moves with the clock (CHANGES_RETENTION_DAYS).
  { method: 'GET', url: '/v1/changes', tier: 'free', scope: 'catalog:read' },
  { method: 'GET', url: '/v1/categories', tier: 'free', scope: 'catalog:read', cacheable: true },
  { method: 'GET', url: '/v1/search', tier: 'free', scope: 'catalog:read', cacheable: true },
  {
    method: 'GET',
    url: '/v1/compare/:tool1/:tool2',
    tier: 'pro',
    scope: 'catalog:read',
    cacheable: true,
  },
  { method: 'GET', url: '/v1/export', tier: 'enterprise', scope: 'export' },
  {
    method: 'POST',
    url: '/v1/webhooks',
    tier: 'enterprise',
    scope: 'webhooks',
    bodyLimit: WEBHOOK_BODY_LIMIT,
  },
  { method: 'GET', url: '/v1/webhooks', tier: 'enterprise', scope: 'webhooks' },
  { method: 'GET', url: '/v1/webhooks/:id', tier: 'enterprise', scope: 'webhooks' },
  { method: 'DELETE', url: '/v1/webhooks/:id', tier: 'enterprise', scope: 'webhooks' },
  {
    method: 'POST',
    url: '/v1/webhooks/:id/test',
    tier: 'enterprise',
    scope: 'webhooks',
    bodyLimit: WEBHOOK_BODY_LIMIT,
  },
  { method: 'GET', url: '/v1/webhooks/:id/deliveries', tier: 'enterprise', scope: 'webhooks' },
];

/**
 * The MCP endpoint (docs/api.md#mcp-for-ai-agents): the gateway answers it itself, each tool and
 * resource through the catalog route above that it mirrors. Its units are taken per operation:
 * one for each `tools/call` and `resources/read`, as the REST read it mirrors would take;
 * discovery, `initialize` and the lists are free.
 */
export const MCP_ROUTE: CatalogRoute = {
  method: 'POST',
  url: '/v1/mcp',
  tier: 'free',
  // Every tool reads the catalog.
  scope: 'catalog:read',
  bodyLimit: 16 * 1024,
  quotaCost: 'per-operation',
};

/** The table's entry for a route, by method and template (HEAD is served as GET). */
export function catalogRoute(method: string, url: string): CatalogRoute | undefined {
  const asked = method === 'HEAD' ? 'GET' : method;
  return CATALOG_ROUTES.find((route) => route.method === asked && route.url === url);
}

/**
 * Headers the gateway uses to tell the catalog who is calling. Clients' copies are stripped by
 * the gateway; the catalog believes them only next to the internal token.
 */
export const INTERNAL_HEADERS = {
  token: 'x-internal-token',
  tier: 'x-caller-tier',
  keyId: 'x-caller-key-id',
} as const;

/**
 * Internal response header of the catalog: the catalog version an answer was computed at. The
 * catalog sets it only on answers of its response cache (shared by every key of a tier); the
 * gateway keeps such answers in its own cache and never passes the header on to clients.
 */
export const CATALOG_VERSION_HEADER = 'x-catalog-version';

/** The catalog's internal routes, called by the gateway with its token; never proxied. */
export const INTERNAL_PATHS = {
  /**
   * The version the catalog serves, polled by every gateway: its response cache then follows
   * catalog changes within a second whatever happened to their announcement on the change feed.
   */
  catalogVersion: '/internal/v1/catalog-version',
  /** A key passed 80% of its daily quota: the catalog turns it into `quota.warning` webhooks. */
  quotaWarnings: '/internal/v1/quota-warnings',
  /**
   * The catalog's `/readyz` behind the token: 200 says both that the catalog is ready and that it
   * takes this gateway's token, 401 that it refuses the token. Each gateway's readiness asks it.
   */
  readiness: '/internal/v1/readiness',
} as const;

/** Who is calling: set by the gateway from the API key, by the catalog from the gateway's headers. */
export interface Caller {
  tier: Tier;
  keyId: string;
  /**
   * On the gateway, which of the key's secrets made the request: the current one, or the
   * previous one in its grace (`until`), which may use the key but not manage it.
   */
  secret?: { readonly kind: 'current' } | { readonly kind: 'previous'; readonly until: string };
  /** On the gateway, a restricted key's scopes; null: everything its tier allows. */
  scopes?: readonly Scope[] | null;
}

/**
 * What travels on the change feed. `keys`: the digest of an API key that was created, revoked or
 * re-tiered. `key-status`: the same change as JSON `{keyId, tier, revoked}`, for the catalog,
 * whose webhooks deliver only to active Enterprise keys. `catalog`: the catalog version after an
 * operator change.
 */
export type ChangeTopic = 'keys' | 'key-status' | 'catalog';
