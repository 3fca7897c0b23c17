import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../../../shared/errors';
import { tagRequestSpan } from '../../../shared/span-attributes';
import { TIER_LABELS, type Tier } from '../../../shared/tiers';
import { KeyDigests } from '../keys/api-key';
import type { KeyCache } from '../keys/key-cache';
import type { EndReason, KeyRecord, SecretMatch } from '../keys/key-store';
import { type SecretState, secretState } from '../keys/secret-lifecycle';
import { isAddressAllowed } from '../keys/allowed-addresses';
import type { UnknownKeyLimiter } from '../keys/unknown-key-limiter';
import type { GatewayMetrics } from '../observability/metrics';
import type { QuotaDecision, QuotaLimiter } from '../quota/quota-limiter';
import { ratePolicy, setRateLimitHeaders } from '../quota/rate-limit-headers';
import { clientAddress } from '../plugins/client-address';

/** A 401 names how to authenticate (RFC 9110 11.6.1): no registered scheme fits an API key. */
export const API_KEY_CHALLENGE = 'ApiKey realm="Tool Directory", header="x-api-key"';

/** The 401 to throw, its challenge set on the reply. */
function unauthorized(reply: FastifyReply, error: Error): Error {
  reply.header('www-authenticate', API_KEY_CHALLENGE);
  return error;
}

/** The 401 of a secret that ended, saying what ended it (docs/api.md#authentication-errors). */
export function endedSecretError(state: Extract<SecretState, { kind: 'ended' }>): Error {
  switch (state.reason) {
    case 'revoked':
      return new Errors.apiKeyRevoked(state.at);
    case 'rolled':
      return new Errors.apiKeyReplaced(state.at);
    case 'expired':
      return new Errors.apiKeyExpired(state.at);
    case 'leaked':
      return new Errors.apiKeyLeaked(state.url ?? 'an unnamed location');
  }
}

/** `gateway_auth_failures_total`'s reason for each way a secret ends. */
const ENDED_LABELS: Record<EndReason, string> = {
  revoked: 'revoked',
  rolled: 'replaced',
  expired: 'expired',
  leaked: 'leaked',
};

type DecisionCounter = ReturnType<GatewayMetrics['quotaDecisions']['labels']>;

export interface GuardOptions {
  keys: KeyCache;
  /** Unknown keys per client address: past the limit, 429 before any store lookup. */
  unknownKeys: UnknownKeyLimiter;
  quota: QuotaLimiter;
  quotas: Record<Tier, number>;
  metrics: GatewayMetrics;
  /** Developer portal URL, named in the "missing key" message. */
  portalUrl: string;
  /** Told of every admitted request's decision, synchronously: must not block or throw. */
  onAdmitted?: (keyId: string, tier: Tier, decision: QuotaDecision) => void;
}

export type ApiKeyGuard = ReturnType<typeof createApiKeyGuard>;

type FailureCounter = ReturnType<GatewayMetrics['authFailures']['labels']>;

/** The metric children and the policy header of the guard's outcomes, looked up once. */
interface GuardCounters {
  byTier: Record<Tier, { policy: string; allowed: DecisionCounter; rejected: DecisionCounter }>;
  missing: FailureCounter;
  malformed: FailureCounter;
  unknown: FailureCounter;
  ended: Record<EndReason, FailureCounter>;
  throttled: FailureCounter;
  notAllowed: FailureCounter;
}

/** What every request's checks use, made once per guard. */
interface GuardContext extends GuardOptions {
  counters: GuardCounters;
  digests: KeyDigests;
}

/** Per tier and per failure, once: so a request only looks its counter up. */
function guardCounters(metrics: GatewayMetrics, quotas: Record<Tier, number>): GuardCounters {
  const failures = (label: string) => metrics.authFailures.labels(label);
  return {
    byTier: Object.fromEntries(
      (Object.keys(quotas) as Tier[]).map((tier) => [
        tier,
        {
          policy: ratePolicy(quotas[tier]),
          allowed: metrics.quotaDecisions.labels(tier, 'allowed'),
          rejected: metrics.quotaDecisions.labels(tier, 'rejected'),
        },
      ]),
    ) as GuardCounters['byTier'],
    missing: failures('missing'),
    malformed: failures('malformed'),
    unknown: failures('unknown'),
    ended: Object.fromEntries(
      Object.entries(ENDED_LABELS).map(([reason, label]) => [reason, failures(label)]),
    ) as Record<EndReason, FailureCounter>,
    throttled: failures('throttled'),
    notAllowed: failures('address_not_allowed'),
  };
}

/** A store lookup, for a key the cache does not know yet. */
async function fromStore(pending: ReturnType<KeyCache['lookup']>): Promise<SecretMatch | null> {
  try {
    return await pending;
  } catch {
    throw new Errors.keyStoreUnavailable();
  }
}

/**
 * A key not cached as existing (`cached`: null when cached as unknown, undefined when not
 * cached at all): refused at once when its address is past its limit of unknown keys, else
 * looked up in the store unless known not to exist, and counted when it does not. A secret the
 * store knows, even an ended one, is never counted: a client retrying an old secret does not
 * lock its successor out.
 */
async function checkUnknown(
  { unknownKeys, keys, counters }: GuardContext,
  request: FastifyRequest,
  reply: FastifyReply,
  digest: string,
  cached: null | undefined,
): Promise<SecretMatch> {
  const address = clientAddress(request);
  const wait = unknownKeys.secondsBlocked(address);
  if (wait > 0) {
    counters.throttled.inc();
    reply.header('retry-after', wait);
    throw new Errors.tooManyInvalidKeys(unknownKeys.perMinute);
  }
  const match = cached === null ? null : await fromStore(keys.lookup(digest));
  if (match === null) {
    unknownKeys.count(address);
    counters.unknown.inc();
    throw unauthorized(reply, new Errors.apiKeyInvalid());
  }
  return match;
}

/**
 * A conditional read (`If-None-Match`) of a catalog route: answered 304 it takes no unit, as
 * GitHub does not count a 304 (docs/api.md#conditional-requests-etag), so its unit is taken by
 * the route when the answer is known: `charge` for anything else, `standing` for the 304.
 */
export function chargesOnAnswer(request: FastifyRequest): boolean {
  return (
    request.headers['if-none-match'] !== undefined &&
    (request.method === 'GET' || request.method === 'HEAD') &&
    request.routeOptions.config.catalogRoute !== undefined
  );
}

/**
 * The caller's key, checked (a 401 thrown otherwise), its tier and id set on the request. A
 * cached key is checked without awaiting anything: the hot path stays synchronous.
 */
function authenticate(
  context: GuardContext,
  request: FastifyRequest,
  reply: FastifyReply,
): KeyRecord | Promise<KeyRecord> {
  const { counters } = context;
  // Every answer depends on the key (its tier picks the data and the ETag): shared caches
  // must keep them apart. CORS may have put Origin there already.
  const vary = reply.getHeader('vary');
  reply.header('vary', vary === undefined ? 'x-api-key' : `${String(vary)}, x-api-key`);
  const key = request.headers['x-api-key'];
  if (key === undefined || key === '') {
    counters.missing.inc();
    throw unauthorized(reply, new Errors.apiKeyMissing(context.portalUrl));
  }
  const digest = typeof key === 'string' ? context.digests.of(key) : undefined;
  if (digest === undefined) {
    counters.malformed.inc();
    throw unauthorized(reply, new Errors.apiKeyInvalid());
  }
  const cached = context.keys.cached(digest);
  if (cached) return admit(counters, request, reply, cached, digest);
  return checkUnknown(context, request, reply, digest, cached).then((match) =>
    admit(counters, request, reply, match, digest),
  );
}

/** The secret's state decides: a working one is let in as the caller, an ended one is a 401. */
function admit(
  counters: GuardCounters,
  request: FastifyRequest,
  reply: FastifyReply,
  match: SecretMatch,
  digest: string,
): KeyRecord {
  const state = secretState(match, digest, Date.now());
  if (state.kind === 'ended') {
    counters.ended[state.reason].inc();
    throw unauthorized(reply, endedSecretError(state));
  }
  const { record } = match;
  // Before any unit is taken: a key used from elsewhere spends nothing of its owner's quota.
  if (record.allowedAddresses !== null && !isAddressAllowed(record.allowedAddresses, request.ip)) {
    counters.notAllowed.inc();
    throw new Errors.addressNotAllowed();
  }
  request.caller = { tier: record.tier, keyId: record.id, secret: state, scopes: record.scopes };
  request.keyRecord = record;
  return record;
}

/** A unit's decision taken: the headers set, counted, and past the quota the 429 thrown. */
function settle(
  { counters, onAdmitted }: GuardContext,
  request: FastifyRequest,
  reply: FastifyReply,
  decision: QuotaDecision,
  quotaMs: number,
): void {
  const { tier, keyId } = request.caller!;
  tagRequestSpan(request, tier, quotaMs);
  const tierCounters = counters.byTier[tier];
  setRateLimitHeaders(reply, decision, tierCounters.policy);
  if (!decision.allowed) {
    tierCounters.rejected.inc();
    reply.header('retry-after', decision.secondsToReset);
    throw new Errors.quotaExceeded(
      TIER_LABELS[tier],
      decision.limit,
      new Date(decision.resetAt * 1000).toISOString(),
    );
  }
  tierCounters.allowed.inc();
  onAdmitted?.(keyId, tier, decision);
}

/**
 * The per-request path of every keyed route: check the key (docs/api.md#authentication-errors) from
 * the in-process cache, take one unit of the key's daily quota
 * (docs/api.md#quotas-and-rate-limit-headers), and set the rate-limit headers, which then stay on
 * the response whatever its status.
 */
export function createApiKeyGuard(options: GuardOptions) {
  const context: GuardContext = {
    ...options,
    counters: guardCounters(options.metrics, options.quotas),
    digests: new KeyDigests(),
  };
  const { quota } = options;
  async function standing(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { keyId, tier } = request.caller!;
    const started = performance.now();
    const decision = await quota.peek(keyId, tier);
    tagRequestSpan(request, tier, performance.now() - started);
    setRateLimitHeaders(reply, decision, context.counters.byTier[tier].policy);
  }
  return {
    /**
     * The key checked, one unit taken, the rate-limit headers set: every route's default. A
     * conditional read of a catalog route is only checked here: its unit is taken by the route
     * once it knows the answer is not a 304 (`chargesOnAnswer`).
     */
    async guard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const checked = authenticate(context, request, reply);
      const { id, tier } = checked instanceof Promise ? await checked : checked;
      if (chargesOnAnswer(request)) return;
      const started = performance.now();
      const decision = await quota.consume(id, tier);
      settle(context, request, reply, decision, performance.now() - started);
    },
    /**
     * The key checked and the rate-limit headers set, no unit taken (a route of `quotaCost: 0`);
     * a key past its quota is let through.
     */
    async check(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      await authenticate(context, request, reply);
      await standing(request, reply);
    },
    /**
     * The key checked, the quota not asked: a route that takes units per operation (`quotaCost:
     * 'per-operation'`, the MCP endpoint) asks it once it knows the operation, with `charge` or
     * `standing`, so each request makes one quota call.
     */
    async identify(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const checked = authenticate(context, request, reply);
      if (checked instanceof Promise) await checked;
    },
    /** The rate-limit headers of a caller the check let in, no unit taken. */
    standing,
    /**
     * An `onError` hook for a route whose unit is taken in its handler (per operation, or on the
     * answer): a request refused before the handler (its body, its tier or scope) still carries
     * the rate-limit headers every keyed answer carries, and takes no unit.
     */
    async headersOnRefusal(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      if (request.caller !== null && !reply.hasHeader('ratelimit')) await standing(request, reply);
    },
    /**
     * One unit taken for a caller the check let in, as the guard takes it: for an endpoint that
     * charges per operation (an MCP `tools/call`). Past the quota the 429 error is thrown.
     */
    async charge(request: FastifyRequest, reply: FastifyReply): Promise<QuotaDecision> {
      const { tier, keyId } = request.caller!;
      const started = performance.now();
      const decision = await quota.consume(keyId, tier);
      settle(context, request, reply, decision, performance.now() - started);
      return decision;
    },
  };
}
