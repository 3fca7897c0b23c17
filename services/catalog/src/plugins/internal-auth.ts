import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Errors } from '../../../shared/errors';
import { tagRequestSpan } from '../../../shared/span-attributes';
import { INTERNAL_HEADERS } from '../../../shared/contract';
import { isTier } from '../../../shared/tiers';

/** Compares in constant time (for equal lengths; a length says nothing about a random token). */
function sameSecret(given: unknown, expected: Buffer): boolean {
  return (
    typeof given === 'string' &&
    given.length === expected.length &&
    timingSafeEqual(Buffer.from(given), expected)
  );
}

/**
 * Deny by default, on every route of the catalog: the caller's tier is trusted only when the
 * gateway's shared secret comes with it (docs/api.md#health-request-ids-and-tracing), so a client
 * reaching the catalog directly gets 401. Routes opt out explicitly: `config.public` (health, the
 * OpenAPI part), `config.admin`, which needs the admin bearer token instead
 * (docs/api.md#catalog-changes-and-freshness), or `config.internal`, a call of the gateway's own,
 * which needs the token but names no caller.
 */
export const internalAuthPlugin = fp<{ token: string; adminToken?: string | undefined }>(
  async function internalAuth(app: FastifyInstance, { token, adminToken }) {
    const expected = Buffer.from(token);
    const adminBearer = adminToken === undefined ? undefined : Buffer.from(`Bearer ${adminToken}`);
    app.decorateRequest('caller', null);
    app.addHook('onRequest', async (request) => {
      const { config } = request.routeOptions;
      if (config.public) return;
      if (config.admin) {
        if (!adminBearer || !sameSecret(request.headers.authorization, adminBearer)) {
          throw new Errors.adminAuth();
        }
        return;
      }
      const trusted = sameSecret(request.headers[INTERNAL_HEADERS.token], expected);
      // The gateway's own calls (not a client's) need the token and no caller.
      if (config.internal) {
        if (!trusted) throw new Errors.internalAuth();
        return;
      }
      const tier = request.headers[INTERNAL_HEADERS.tier];
      if (!trusted || !isTier(tier)) throw new Errors.internalAuth();
      const keyId = request.headers[INTERNAL_HEADERS.keyId];
      request.caller = { tier, keyId: typeof keyId === 'string' ? keyId : 'unknown' };
      tagRequestSpan(request, tier);
    });
  },
  { name: 'internal-auth' },
);
