import type { FastifyRequest, preValidationHookHandler } from 'fastify';
import { Errors } from '../../shared/errors';
import { isPaidTier } from '../../shared/tiers';

/**
 * Endpoint access by tier (SPEC B3), checked in preValidation: a caller whose tier may not use
 * the endpoint gets the 403, whatever else is wrong with the request.
 */
function allowOnly(
  allowed: (request: FastifyRequest) => boolean,
  refusal: () => Error,
): preValidationHookHandler {
  return function tierAccess(request, _reply, done) {
    done(allowed(request) ? undefined : refusal());
  };
}

export const paidTiersOnly = allowOnly(
  (request) => isPaidTier(request.caller!.tier),
  () => new Errors.paidTierRequired(),
);

export const enterpriseOnly = allowOnly(
  (request) => request.caller!.tier === 'enterprise',
  () => new Errors.enterpriseTierRequired(),
);
