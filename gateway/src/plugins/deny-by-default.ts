import type { FastifyInstance, onRequestAsyncHookHandler, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import '../../../services/shared/contract';
import type { Tier } from '../../../services/shared/tiers';
import { tierGuard } from '../../../services/shared/tier-guard';

/** A route as the guard saw it, for the route-security test and for operators. */
export interface RouteSecurity {
  method: string;
  url: string;
  access: 'public' | 'key' | `key, ${Tier}`;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route and how it is guarded, in the order they were registered. */
    routeSecurity: readonly RouteSecurity[];
  }
}

/**
 * Deny by default: every route of the gateway, whoever registers it and wherever, gets the API
 * key guard (a key, a quota unit, the rate-limit headers) as its first `onRequest` hook, and the
 * tier check of its route-table entry after it, unless it says `config.public` (health, portal,
 * registration, the API reference) or is a CORS preflight. A new endpoint is guarded and metered without asking; being
 * open is a declaration a reviewer sees. Registered first, before any route.
 */
export interface DenyByDefaultOptions {
  guard: onRequestAsyncHookHandler;
  /**
   * Route prefixes whose every route is public: only for a third-party plugin whose routes cannot
   * say `config.public` themselves (the API reference's static files).
   */
  publicPrefixes?: readonly string[];
}

export const denyByDefaultPlugin = fp<DenyByDefaultOptions>(
  async function denyByDefault(app: FastifyInstance, { guard, publicPrefixes = [] }) {
    const routes: RouteSecurity[] = [];
    const tierGuards = new Map<Tier, onRequestAsyncHookHandler>();
    app.decorate('routeSecurity', routes);
    app.addHook('onRoute', (route: RouteOptions & { prefix?: string }) => {
      const methods = ([] as string[]).concat(route.method);
      const record = (access: RouteSecurity['access']) => {
        for (const method of methods) routes.push({ method, url: route.url, access });
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
      const tier = route.config?.catalogRoute?.tier;
      const checks: onRequestAsyncHookHandler[] = [guard];
      if (tier !== undefined && tier !== 'free') {
        let check = tierGuards.get(tier);
        if (check === undefined) tierGuards.set(tier, (check = tierGuard(tier)));
        checks.push(check);
      }
      route.onRequest = [...checks, ...(own as onRequestAsyncHookHandler[])];
      record(tier === undefined || tier === 'free' ? 'key' : `key, ${tier}`);
    });
  },
  { name: 'deny-by-default' },
);
