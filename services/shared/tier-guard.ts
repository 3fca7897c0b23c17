import type { onRequestAsyncHookHandler } from 'fastify';
import { Errors } from './errors';
import { type Tier, tierAtLeast } from './tiers';

/**
 * A 403 for callers below `minimum` (docs/api.md, "Authentication errors"), as an `onRequest`
 * hook after the caller is known (the gateway's key guard, the catalog's internal auth) and
 * before the body is read: a Free key on an Enterprise route is a 403, never a 400. Both
 * services attach it from the route table (contract.ts).
 */
export function tierGuard(minimum: Tier): onRequestAsyncHookHandler {
  const refusal =
    minimum === 'enterprise' ? Errors.enterpriseTierRequired : Errors.paidTierRequired;
  return async (request) => {
    if (!tierAtLeast(request.caller!.tier, minimum)) throw new refusal();
  };
}
