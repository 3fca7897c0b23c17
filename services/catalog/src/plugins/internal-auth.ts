import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import '../../../shared/caller';
import { Errors } from '../../../shared/errors';
import { tagRequestSpan } from '../../../shared/span-attributes';
import { INTERNAL_HEADERS, isTier } from '../../../shared/tiers';

/**
 * The catalog trusts the caller's tier only when the gateway's shared secret comes with it
 * (SPEC B8); anything else gets 401, so a client reaching the catalog directly gets nothing.
 */
export const internalAuthPlugin = fp<{ token: string }>(
  async function internalAuth(app: FastifyInstance, { token }) {
    const expected = Buffer.from(token);
    app.decorateRequest('caller', null);
    app.addHook('onRequest', async (request) => {
      if (request.routeOptions.config.public) return;
      const given = request.headers[INTERNAL_HEADERS.token];
      const tier = request.headers[INTERNAL_HEADERS.tier];
      if (
        typeof given !== 'string' ||
        given.length !== expected.length ||
        !timingSafeEqual(Buffer.from(given), expected) ||
        !isTier(tier)
      ) {
        throw new Errors.internalAuth();
      }
      const keyId = request.headers[INTERNAL_HEADERS.keyId];
      request.caller = { tier, keyId: typeof keyId === 'string' ? keyId : 'unknown' };
      tagRequestSpan(request, tier);
    });
  },
  { name: 'internal-auth' },
);
