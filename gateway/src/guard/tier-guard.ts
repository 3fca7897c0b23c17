import type { onRequestAsyncHookHandler } from 'fastify';
import '../../../services/shared/contract';
import { Errors } from '../../../services/shared/errors';
import { type Tier, tierAtLeast } from '../../../services/shared/tiers';

/**
 * A 403 for callers below `minimum` (docs/api.md, "Authentication errors"), run after the key
 * guard and before the body is read: a Free key on an Enterprise route is a 403, never a 400.
 */
export function tierGuard(minimum: Tier): onRequestAsyncHookHandler {
  const refusal =
    minimum === 'enterprise' ? Errors.enterpriseTierRequired : Errors.paidTierRequired;
  return async (request) => {
    if (!tierAtLeast(request.caller!.tier, minimum)) throw new refusal();
  };
}
