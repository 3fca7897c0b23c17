import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { jsonBodyValidator } from '../../../shared/body-validator';
import { routeNotFound } from '../../../shared/error-handler';
import { Errors } from '../../../shared/errors';
import { ErrorBody } from '../../../shared/openapi';
import type { RedisClient } from '../../../shared/redis';
import { addressLimiter, limitPerAddress } from '../guard/per-address-limit';
import type { KeyRecord, KeyStore } from '../keys/key-store';
import { LeakReport, LeakVerdicts, MAX_LEAKED_TOKENS, actOnLeakReport } from '../leaks/leak-report';
import type { ScanningKeys } from '../leaks/scanning-keys';

/** Room for MAX_LEAKED_TOKENS tokens with their URLs; a larger body is a 413 unread. */
export const LEAK_REPORT_BODY_LIMIT = 1024 * 1024;

/** A 401 names how to authenticate (RFC 9110 11.6.1): a provider's signature in these headers. */
export const LEAK_REPORT_CHALLENGE =
  'Signature realm="Tool Directory leak reports", headers="Github-Public-Key-Identifier Github-Public-Key-Signature"';

const KEY_IDENTIFIER_HEADER = 'github-public-key-identifier';
const SIGNATURE_HEADER = 'github-public-key-signature';

export interface LeakRoutesOptions {
  store: KeyStore;
  /** Undefined when SECRET_SCANNING_PUBLIC_KEYS is unset: the endpoint answers 404. */
  scanningKeys: ScanningKeys | undefined;
  /**
   * Reports per client address and minute (LEAK_REPORTS_PER_MINUTE): the endpoint is public.
   * Counted on Redis when given, so on every replica.
   */
  attemptsPerMinute: number;
  redis: RedisClient | undefined;
  /** Applies a key change here at once and announces it to every replica. */
  announce: (record: KeyRecord) => Promise<void>;
}

/**
 * `POST /v1/keys/leaks`: secret scanners (GitHub's partner program) report secrets they found in
 * public places; each working secret of this service among them ends at once, on every replica
 * within a second (docs/security.md, "Leak reports"). Public, because the scanner has no key: the
 * report is believed only with a valid ECDSA signature of the raw body by a key of
 * SECRET_SCANNING_PUBLIC_KEYS, checked before the body is parsed, and attempts are limited per
 * address.
 */
export const leakRoutes: FastifyPluginAsyncTypebox<LeakRoutesOptions> = async (
  app,
  { store, scanningKeys, attemptsPerMinute, redis, announce },
) => {
  const attempts = addressLimiter(
    { points: attemptsPerMinute, duration: 60, keyPrefix: 'leak-reports' },
    redis,
  );
  // This plugin's own JSON parser (the routes of this plugin only): the signature covers the raw
  // bytes, so they are checked before anything is parsed.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const identifier = request.headers[KEY_IDENTIFIER_HEADER];
    const signature = request.headers[SIGNATURE_HEADER];
    const signed =
      scanningKeys !== undefined &&
      typeof identifier === 'string' &&
      typeof signature === 'string' &&
      scanningKeys.verifies(body as Buffer, identifier, signature);
    if (!signed) return done(new Errors.leakReportUnsigned(), undefined);
    let report: unknown;
    try {
      report = JSON.parse((body as Buffer).toString('utf8'));
    } catch (err) {
      return done(new Errors.invalidJson((err as Error).message), undefined);
    }
    if (Array.isArray(report) && report.length > MAX_LEAKED_TOKENS) {
      return done(new Errors.leakReportTooLarge(MAX_LEAKED_TOKENS), undefined);
    }
    done(null, report);
  });

  app.addHook('onError', async (_request, reply, error) => {
    if (error instanceof Errors.leakReportUnsigned)
      reply.header('www-authenticate', LEAK_REPORT_CHALLENGE);
  });

  app.post(
    '/v1/keys/leaks',
    {
      bodyLimit: LEAK_REPORT_BODY_LIMIT,
      config: { public: true },
      validatorCompiler: jsonBodyValidator,
      onRequest: [
        async (request) => {
          if (scanningKeys === undefined) throw routeNotFound(request);
        },
        limitPerAddress(attempts, () => new Errors.tooManyLeakReports(attemptsPerMinute)),
      ],
      schema: {
        summary: 'Report leaked API keys (secret scanners)',
        operationId: 'reportLeakedKeys',
        description: `For secret-scanning providers (GitHub's partner format): a signed list of at most ${MAX_LEAKED_TOKENS} tokens found in public; each working secret among them is revoked at once. Signed with ECDSA P-256/SHA-256 over the raw body (Github-Public-Key-Identifier, Github-Public-Key-Signature). Not available when the service has no SECRET_SCANNING_PUBLIC_KEYS.`,
        tags: ['keys'],
        security: [],
        body: LeakReport,
        response: {
          200: LeakVerdicts,
          400: ErrorBody,
          401: ErrorBody,
          404: ErrorBody,
          413: ErrorBody,
          415: ErrorBody,
          429: ErrorBody,
        },
      },
    },
    async (request) => {
      const { verdicts, changed } = await actOnLeakReport(store, request.body, request.ip ?? null);
      for (const { record, url } of changed) {
        request.log.warn({ keyId: record.id, url }, 'a secret reported leaked was ended');
        await announce(record).catch((err: unknown) =>
          request.log.warn({ err }, 'key announcement failed'),
        );
      }
      return verdicts;
    },
  );
};
