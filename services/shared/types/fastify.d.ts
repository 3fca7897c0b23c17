/**
 * What both services add to Fastify's types: the fields their plugins decorate instances and
 * requests with (health, deny-by-default, internal-auth, request-log, the catalog's response
 * cache), and the route `config` their hooks read. Included by both tsconfigs, so no module
 * imports it. skipLibCheck skips declaration files: an import here that stops resolving turns its
 * type into `any` silently, which `tsc --noEmit -p tsconfig.json --skipLibCheck false` shows.
 */
import type { KeyRecord } from '../../gateway/src/keys/key-store';
import type { RouteSecurity } from '../../gateway/src/plugins/deny-by-default';
import type { Caller, CatalogRoute, Scope } from '../contract';
import type { TraceFields } from '../logger';

declare module 'fastify' {
  interface FastifyInstance {
    /** Set when shutdown begins: readiness fails at once so load balancers stop sending. */
    draining: boolean;
    /** Every route and how it is guarded, in the order they were registered (gateway only). */
    routeSecurity: readonly RouteSecurity[];
  }
  interface FastifyRequest {
    /** Who is calling: set by the gateway's key guard, by the catalog's internal-auth. */
    caller: Caller | null;
    /** The calling key's record as the guard found it (gateway only); null before the guard. */
    keyRecord: KeyRecord | null;
    /** The ids of the request's span, kept for its access line (gateway, tracing on). */
    traceIds: TraceFields | null;
    /**
     * Where this request's answer is cached, and the catalog version it was computed at (the
     * catalog's response cache).
     */
    cacheSlot: { key: string; version: number } | null;
  }
  interface FastifyContextConfig {
    /** The route answers without credentials (health checks, portal, registration). */
    public?: boolean;
    /** A catalog route of the gateway's own calls: its internal token, no caller (internal-auth). */
    internal?: boolean;
    /**
     * A catalog route that needs `Authorization: Bearer <ADMIN_TOKEN>` instead of the gateway's
     * token (internal-auth).
     */
    admin?: boolean;
    /** The contract's entry of a catalog route, on both services (tier, cache, quota cost). */
    catalogRoute?: CatalogRoute;
    /** A gateway route whose requests take no unit of the quota (the key is still checked). */
    quotaCost?: 0;
    /** A gateway route that changes the calling key: its current secret alone may call it. */
    managesKey?: true;
    /**
     * The scope a restricted key needs for a gateway route of its own (catalog routes take it from
     * their table entry); `none` for a route that serves nothing a scope guards (the 404s).
     */
    scope?: Scope | 'none';
    /**
     * A gateway route that also takes an OAuth access token (`Authorization: Bearer`) in place
     * of an API key: the MCP endpoint, for agent hosts (docs/security.md).
     */
    bearer?: true;
  }
}
