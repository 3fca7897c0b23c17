import type { FastifyInstance, onRequestAsyncHookHandler, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { catalogRoute } from '../../../shared/contract';
import { tierGuard } from '../../../shared/tier-guard';
import type { Tier } from '../../../shared/tiers';

/** A bodiless route (GET, DELETE) has nothing to read: a stray body is kept small. */
const BODILESS_LIMIT = 1024;

/**
 * Holds every public route of the catalog (under /v1) to the gateway–catalog route table, which
 * the routes themselves do not restate: a route the table lacks stops the catalog at start; a
 * route of the table gets its entry in `config.catalogRoute` (the response cache reads
 * `cacheable` there), the table's body limit, and, above Free, the tier check as its first
 * `onRequest` hook, after the caller is known and before anything of the request is read.
 */
export const routeContractPlugin = fp(
  async function routeContract(app: FastifyInstance) {
    const tierGuards = new Map<Tier, onRequestAsyncHookHandler>();
    app.addHook('onRoute', (route: RouteOptions) => {
      if (!route.url.startsWith('/v1/')) return;
      const methods = ([] as string[]).concat(route.method);
      const entry = catalogRoute(methods[0]!, route.url);
      if (entry === undefined || methods.some((m) => catalogRoute(m, route.url) !== entry)) {
        throw new Error(
          `${methods.join(',')} ${route.url} is not in the route table (services/shared/contract.ts)`,
        );
      }
      route.config = { ...route.config, catalogRoute: entry };
      route.bodyLimit = entry.bodyLimit ?? BODILESS_LIMIT;
      if (entry.tier === 'free') return;
      let check = tierGuards.get(entry.tier);
      if (check === undefined) tierGuards.set(entry.tier, (check = tierGuard(entry.tier)));
      const own = route.onRequest === undefined ? [] : ([] as unknown[]).concat(route.onRequest);
      route.onRequest = [check, ...(own as onRequestAsyncHookHandler[])];
    });
  },
  { name: 'route-contract', dependencies: ['internal-auth'] },
);
