import { Type } from '@sinclair/typebox';
import { jsonBodyValidator } from '../../../shared/body-validator';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Errors } from '../../../shared/errors';
import { ErrorBody } from '../../../shared/openapi';
import { issueKey } from '../keys/issue-key';
import { KeyRequestBody } from '../keys/key-request';
import { EmailTakenError, type KeyRecord, type KeyStore } from '../keys/key-store';
import { addressLimiter, limitPerAddress } from '../guard/per-address-limit';
import type { RedisClient } from '../../../shared/redis';

export const REGISTRATION_BODY_LIMIT = 16 * 1024;

const Registration = Type.Object(
  {
    apiKey: Type.String({ description: 'Shown once: store it now' }),
    tier: Type.Literal('free'),
    dailyLimit: Type.Integer(),
    email: Type.String(),
    name: Type.String(),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { $id: 'Registration', description: 'A new Free key, shown once' },
);

export interface RegisterOptions {
  store: KeyStore;
  freeQuota: number;
  /**
   * Attempts per client address and hour (REGISTRATIONS_PER_HOUR), every attempt counting
   * (docs/api.md#api-keys-and-registration); counted on Redis when given, so on every replica.
   */
  attemptsPerHour: number;
  redis: RedisClient | undefined;
  /** Tells every replica about the new key, so a cached "no such key" is dropped. */
  announce: (record: KeyRecord) => Promise<void>;
  /** KEY_MAX_LIFETIME_DAYS. */
  maxLifetimeDays: number | undefined;
}

/**
 * `POST /v1/register`: a Free key for anyone, shown once (docs/api.md#api-keys-and-registration).
 */
export const registerRoutes: FastifyPluginAsyncTypebox<RegisterOptions> = async (
  app,
  { store, freeQuota, attemptsPerHour, redis, announce, maxLifetimeDays },
) => {
  const attempts = addressLimiter(
    { points: attemptsPerHour, duration: 3_600, keyPrefix: 'register' },
    redis,
  );
  app.post(
    '/v1/register',
    {
      bodyLimit: REGISTRATION_BODY_LIMIT,
      config: { public: true },
      schema: {
        summary: 'Register for a free API key',
        operationId: 'register',
        description: 'Returns a Free-tier key, shown once. Limited per client address.',
        tags: ['keys'],
        security: [],
        body: KeyRequestBody,
        response: {
          201: Registration,
          400: ErrorBody,
          409: ErrorBody,
          413: ErrorBody,
          415: ErrorBody,
          429: ErrorBody,
        },
      },
      validatorCompiler: jsonBodyValidator,
      onRequest: limitPerAddress(attempts, () => new Errors.registrationLimited(attemptsPerHour)),
    },
    async (request, reply) => {
      const { email, useCase = '' } = request.body;
      const { name } = request.body;
      let issued;
      try {
        issued = await issueKey(
          store,
          { tier: 'free', email, name, useCase },
          { maxLifetimeDays, actor: { by: 'self', address: request.ip ?? null } },
        );
      } catch (err) {
        if (err instanceof EmailTakenError) throw new Errors.emailTaken(email);
        throw err;
      }
      const { apiKey, record } = issued;
      await announce(record).catch((err: unknown) =>
        request.log.warn({ err }, 'key announcement failed'),
      );
      request.log.info({ keyId: record.id }, 'API key registered');
      return reply.code(201).send({
        apiKey,
        tier: 'free',
        dailyLimit: freeQuota,
        email,
        name,
        createdAt: record.createdAt,
      });
    },
  );
};
