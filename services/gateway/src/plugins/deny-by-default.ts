import type { FastifyInstance, onRequestAsyncHookHandler, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { Errors } from '../../../shared/errors';
import type { Scope } from '../../../shared/contract';
import type { Tier } from '../../../shared/tiers';
import { tierGuard } from '../../../shared/tier-guard';

/** A route as the guard saw it, for the route-security test and for operators. */
export interface RouteSecurity {
  method: string;
  url: string;
  /** `free of quota`: the key is checked, no unit taken. */
  access:
    | 'public'
    | 'key'
    | 'key, free of quota'
    | 'key, quota per operation'
    | `key, ${Tier}`
    | 'key, current secret';
  /** The scope a restricted key needs; none for a public route. */
  scope?: Scope | 'none';
}

/** Whether a key's scopes (null: unrestricted) allow a route's scope: the one rule of both paths. */
export function hasScope(scopes: readonly Scope[] | null | undefined, scope: Scope): boolean {
  return !scopes || scopes.includes(scope);
}

/** A 403 for a restricted key without the route's scope (docs/api.md, "Restricted keys"). */
function scopeGuard(scope: Scope): onRequestAsyncHookHandler {
  return async (request) => {
    if (!hasScope(request.caller!.scopes, scope)) throw new Errors.scopeMissing(scope);
  };
}

/**
 * A 403 for the previous secret of a rolled key (docs/security.md): it may use the key during its
 * grace, never manage it, so a leaked secret cannot roll the key away from its owner.
 */
const currentSecretOnly: onRequestAsyncHookHandler = async (request) => {
  const secret = request.caller!.secret;
  if (secret?.kind === 'previous') throw new Errors.secretBeingReplaced(secret.until);
};

/**
 * Deny by default: every route of the gateway, whoever registers it and wherever, gets the API
 * key guard (a key, a quota unit, the rate-limit headers; the key and the headers alone on a route
 * of `config.quotaCost: 0`) as its first `onRequest` hook, and the tier check of its route-table
 * entry after it (and, on a route of `config.managesKey`, the current-secret check), unless it
 * says `config.public` (health, portal,
 * registration, the API reference) or is a CORS preflight. A new endpoint is guarded and metered without asking; being
 * open is a declaration a reviewer sees. Registered first, before any route.
 */
export interface DenyByDefaultOptions {
  /** The key checked and one unit taken: every guarded route's first hook. */
  guard: onRequestAsyncHookHandler;
  /** The key checked, no unit taken: instead of `guard` on a route of `config.quotaCost: 0`. */
  check: onRequestAsyncHookHandler;
  /**
   * The key checked, the quota left to the route: instead of `guard` on a route whose table
   * entry takes units per operation.
   */
  identify: onRequestAsyncHookHandler;
  /**
   * Route prefixes whose every route is public: only for a third-party plugin whose routes cannot
   * say `config.public` themselves (the API reference's static files).
   */
  publicPrefixes?: readonly string[];
}

export const denyByDefaultPlugin = fp<DenyByDefaultOptions>(
  async function denyByDefault(
    app: FastifyInstance,
    { guard, check, identify, publicPrefixes = [] },
  ) {
    const routes: RouteSecurity[] = [];
    const tierGuards = new Map<Tier, onRequestAsyncHookHandler>();
    const scopeGuards = new Map<Scope, onRequestAsyncHookHandler>();
    // What the guard finds out about the caller; null on a public route.
    app.decorateRequest('caller', null);
    app.decorateRequest('keyRecord', null);
    app.decorate('routeSecurity', routes);
    app.addHook('onRoute', (route: RouteOptions & { prefix?: string }) => {
      const methods = ([] as string[]).concat(route.method);
      const record = (access: RouteSecurity['access'], scope?: RouteSecurity['scope']) => {
        for (const method of methods) {
          routes.push({ method, url: route.url, access, ...(scope && { scope }) });
        }
      };
      // CORS preflights never need a key (docs/api.md, "Authentication errors").
      const preflight = methods.length === 1 && methods[0] === 'OPTIONS';
      if (
        route.config?.public === true ||
        preflight ||
        publicPrefixes.includes(route.prefix ?? '')
      ) {
        return record('public');
      }
      const own = route.onRequest === undefined ? [] : ([] as unknown[]).concat(route.onRequest);
      // Every keyed route says what a restricted key needs for it: a route that does not is a
      // mistake found at start-up, never a route open to every restricted key.
      const scope = route.config?.catalogRoute?.scope ?? route.config?.scope;
      if (scope === undefined) {
        throw new Error(`Route ${methods.join(',')} ${route.url} declares no scope (config.scope)`);
      }
      const tier = route.config?.catalogRoute?.tier;
      const cost = route.config?.quotaCost ?? route.config?.catalogRoute?.quotaCost;
      const free = cost === 0;
      const perOperation = cost === 'per-operation';
      const checks: onRequestAsyncHookHandler[] = [perOperation ? identify : free ? check : guard];
      if (tier !== undefined && tier !== 'free') {
        let tierCheck = tierGuards.get(tier);
        if (tierCheck === undefined) tierGuards.set(tier, (tierCheck = tierGuard(tier)));
        checks.push(tierCheck);
      }
      if (scope !== 'none') {
        let scopeCheck = scopeGuards.get(scope);
        if (scopeCheck === undefined) scopeGuards.set(scope, (scopeCheck = scopeGuard(scope)));
        checks.push(scopeCheck);
      }
      const manages = route.config?.managesKey === true;
      if (manages) checks.push(currentSecretOnly);
      route.onRequest = [...checks, ...(own as onRequestAsyncHookHandler[])];
      record(
        manages
          ? 'key, current secret'
          : free
            ? 'key, free of quota'
            : perOperation
              ? 'key, quota per operation'
              : tier === undefined || tier === 'free'
                ? 'key'
                : `key, ${tier}`,
        scope,
      );
    });
  },
  { name: 'deny-by-default' },
);
