import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { jsonBodyValidator } from '../../../services/shared/body-validator';
import '../../../services/shared/contract';
import { Errors } from '../../../services/shared/errors';
import { ErrorBody, OPTIONAL_BODY } from '../../../services/shared/openapi';
import { TIERS } from '../../../services/shared/tiers';
import { endedSecretError } from '../guard/api-key-guard';
import { keyDigest } from '../keys/api-key';
import { rollKey } from '../keys/issue-key';
import {
  DEFAULT_GRACE_SECONDS,
  KeyChangedError,
  type KeyRecord,
  KeyRevokedError,
  type KeyStore,
  MAX_GRACE_SECONDS,
} from '../keys/key-store';
import { secretState } from '../keys/secret-lifecycle';

/** A roll's body: at most a number and its name. */
export const ROLL_BODY_LIMIT = 1024;

const RollRequest = Type.Object(
  {
    graceSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_GRACE_SECONDS,
        description: `How long the current key keeps working, ${DEFAULT_GRACE_SECONDS} when left out; 0 revokes it at once (a leaked key)`,
      }),
    ),
  },
  { $id: 'KeyRollRequest' },
);

const KeyRolled = Type.Object(
  {
    apiKey: Type.String({ description: 'The new key, shown once: store it now' }),
    keyId: Type.String({ description: 'The same key id as before' }),
    tier: Type.Union(TIERS.map((tier) => Type.Literal(tier))),
    previousKeyExpiresAt: Type.String({
      format: 'date-time',
      description: 'Until when the key that made this call keeps working (now: not at all)',
    }),
  },
  { $id: 'KeyRolled', description: 'A new secret for the same key id, tier, quota and webhooks' },
);

export interface KeyRoutesOptions {
  store: KeyStore;
  /** Applies the change here at once and announces it to every replica. */
  announce: (record: KeyRecord) => Promise<void>;
}

/**
 * Why a roll from this secret lost (docs/security.md): the secret ended meanwhile (401 with what
 * ended it), or it is now the previous one (403), or the key changed otherwise (409).
 */
async function lostRoll(store: KeyStore, digest: string): Promise<Error> {
  const match = await store.findByDigest(digest);
  if (match === null) return new Errors.apiKeyInvalid();
  const state = secretState(match, digest, Date.now());
  if (state.kind === 'ended') return endedSecretError(state);
  if (state.kind === 'previous') return new Errors.secretBeingReplaced(state.until);
  return new Errors.keyChanged();
}

/**
 * `POST /v1/keys/roll`: a new secret for the calling key, the way to rotate a key without
 * downtime. The key id, tier, today's quota count and webhook subscriptions stay; the key that
 * made the call keeps working until `previousKeyExpiresAt`, a key rolled before stops at once.
 * Only the current secret may roll (`managesKey`), and the store rolls only while the secret that
 * asked is still current, so of concurrent rolls exactly one wins. Every replica applies it
 * within a second, also while Redis is down (the key store's change log).
 */
export const keyRoutes: FastifyPluginAsyncTypebox<KeyRoutesOptions> = async (
  app,
  { store, announce },
) => {
  app.post(
    '/v1/keys/roll',
    {
      bodyLimit: ROLL_BODY_LIMIT,
      config: { managesKey: true },
      validatorCompiler: jsonBodyValidator,
      // No body at all asks for the default grace.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        [OPTIONAL_BODY]: true,
        summary: 'Roll the calling key',
        operationId: 'rollKey',
        description:
          'Issues a new secret for the same key id; the current one keeps working for graceSeconds (default 86400, at most 604800; 0 revokes it at once). Rolling again ends the earlier grace at once.',
        tags: ['keys'],
        body: RollRequest,
        response: {
          201: KeyRolled,
          400: ErrorBody,
          401: ErrorBody,
          403: ErrorBody,
          409: ErrorBody,
          413: ErrorBody,
          415: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      const graceSeconds = request.body?.graceSeconds ?? DEFAULT_GRACE_SECONDS;
      // The guard let this secret in as current; the store rolls only if it still is.
      const digest = keyDigest(request.headers['x-api-key'] as string);
      const rolled = await rollKey(store, request.caller!.keyId, graceSeconds, {
        ifCurrent: digest,
      }).catch((err: unknown) => {
        if (err instanceof KeyRevokedError || err instanceof KeyChangedError) return null;
        throw err;
      });
      if (rolled === null) throw await lostRoll(store, digest);
      const { apiKey, record, previousKeyExpiresAt } = rolled;
      await announce(record).catch((err: unknown) =>
        request.log.warn({ err }, 'key announcement failed'),
      );
      request.log.info({ keyId: record.id, graceSeconds }, 'API key rolled');
      return reply
        .code(201)
        .send({ apiKey, keyId: record.id, tier: record.tier, previousKeyExpiresAt });
    },
  );
};
