import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { jsonBodyValidator } from '../../../shared/body-validator';
import { Errors } from '../../../shared/errors';
import { ErrorBody, OPTIONAL_BODY } from '../../../shared/openapi';
import { TIERS } from '../../../shared/tiers';
import { endedSecretError } from '../guard/api-key-guard';
import { keyDigest } from '../keys/api-key';
import { rollKey } from '../keys/issue-key';
import {
  DEFAULT_GRACE_SECONDS,
  KeyChangedError,
  KEY_EVENT_TYPES,
  KEY_EVENTS_RETENTION_DAYS,
  type KeyRecord,
  KeyRevokedError,
  type KeyStore,
  MAX_GRACE_SECONDS,
} from '../keys/key-store';
import { secretState } from '../keys/secret-lifecycle';
import { listedEvents } from '../keys/key-events';

/** A roll's body: at most a number and its name. */
export const ROLL_BODY_LIMIT = 1024;

/** The longest life a roll may give a secret: ten years. */
export const MAX_EXPIRES_IN_SECONDS = 10 * 365 * 86_400;

const RollRequest = Type.Object(
  {
    expiresInSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_EXPIRES_IN_SECONDS,
        description:
          'When the new secret stops working, in seconds from now (capped by the service); left out, the key keeps its end',
      }),
    ),
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
    expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the new secret stops working; null: never',
    }),
  },
  { $id: 'KeyRolled', description: 'A new secret for the same key id, tier, quota and webhooks' },
);

const KeyEvents = Type.Object(
  {
    data: Type.Array(
      Type.Object({
        type: Type.Union(KEY_EVENT_TYPES.map((type) => Type.Literal(type))),
        at: Type.String({ format: 'date-time' }),
        by: Type.Union([
          Type.Literal('self'),
          Type.Literal('operator'),
          Type.Literal('leak_report'),
        ]),
        address: Type.Union([Type.String(), Type.Null()], {
          description: 'The client address of a change made through the API; null otherwise',
        }),
        detail: Type.Object({}, { additionalProperties: true }),
      }),
      {
        description: `The key's changes of the last ${KEY_EVENTS_RETENTION_DAYS} days, newest first`,
      },
    ),
    meta: Type.Object({ attribution: Type.String(), days: Type.Integer() }),
  },
  { $id: 'KeyEvents', description: "The calling key's changes" },
);

export interface KeyRoutesOptions {
  store: KeyStore;
  /** Applies the change here at once and announces it to every replica. */
  announce: (record: KeyRecord) => Promise<void>;
  /** KEY_MAX_LIFETIME_DAYS. */
  maxLifetimeDays: number | undefined;
  attribution: string;
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
  { store, announce, maxLifetimeDays, attribution },
) => {
  app.get(
    '/v1/keys/events',
    {
      config: { quotaCost: 0, scope: 'usage' },
      schema: {
        summary: "The calling key's events",
        operationId: 'listKeyEvents',
        description: `Every change of the calling key in the last ${KEY_EVENTS_RETENTION_DAYS} days, newest first: created, rolled, tier_changed, restricted, expired, revoked, leak_reported, each with who made it (self, operator, leak_report). Takes no unit of the quota.`,
        tags: ['keys'],
        response: { 200: KeyEvents, 401: ErrorBody, 403: ErrorBody, 503: ErrorBody },
      },
    },
    async (request) => {
      const record = request.keyRecord!;
      const now = Date.now();
      const since = new Date(now - KEY_EVENTS_RETENTION_DAYS * 86_400_000).toISOString();
      const stored = await store.events(record.id, since);
      return {
        data: listedEvents(record, stored, now),
        meta: { attribution, days: KEY_EVENTS_RETENTION_DAYS },
      };
    },
  );

  app.post(
    '/v1/keys/roll',
    {
      bodyLimit: ROLL_BODY_LIMIT,
      config: { managesKey: true, scope: 'keys:roll' },
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
      const expiresInSeconds = request.body?.expiresInSeconds;
      // The guard let this secret in as current; the store rolls only if it still is.
      const digest = keyDigest(request.headers['x-api-key'] as string);
      const rolled = await rollKey(store, request.caller!.keyId, graceSeconds, {
        ifCurrent: digest,
        maxLifetimeDays,
        actor: { by: 'self', address: request.ip ?? null },
        ...(expiresInSeconds !== undefined && { expiresInSeconds }),
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
      return reply.code(201).send({
        apiKey,
        keyId: record.id,
        tier: record.tier,
        previousKeyExpiresAt,
        expiresAt: record.expiresAt,
      });
    },
  );
};
