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
import type { AccessTokens } from '../oauth/access-tokens';
import { unitTakenAhead } from './unit-taken-ahead';

/** A 401 names how to authenticate (RFC 9110 11.6.1): no registered scheme fits an API key. */
export const API_KEY_CHALLENGE = 'ApiKey realm="Tool Directory", header="x-api-key"';

/** The 401 to throw, its challenge set on the reply. */
function unauthorized(reply: FastifyReply, error: Error, challenge = API_KEY_CHALLENGE): Error {
  reply.header('www-authenticate', challenge);
  return error;
}

/**
 * The challenges of a route that also takes OAuth bearer tokens (RFC 6750, RFC 9728): Bearer
 * first, naming the protected resource's metadata, as MCP clients look for it; then the API key.
 */
export function bearerChallenge(resourceMetadataUrl: string, error?: 'invalid_token'): string {
  const bearer = `Bearer resource_metadata="${resourceMetadataUrl}"`;
  return `${error === undefined ? bearer : `${bearer}, error="${error}"`}, ${API_KEY_CHALLENGE}`;
}

/** The token of an `Authorization: Bearer` header, if that is what it holds. */
function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined || header.length < 8) return undefined;
  if (header.slice(0, 7).toLowerCase() !== 'bearer ') return undefined;
  const token = header.slice(7).trim();
  return token === '' ? undefined : token;
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
  /**
   * OAuth access tokens, taken as `Authorization: Bearer` on routes of `config.bearer` (the MCP
   * endpoint), and the URL of that resource's metadata (RFC 9728) its challenges name.
   */
  bearer?: { tokens: AccessTokens; resourceMetadataUrl: string };
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
  invalidToken: FailureCounter;
}

/** What every request's checks use, made once per guard. */
interface GuardContext extends GuardOptions {
  counters: GuardCounters;
  digests: KeyDigests;
  /** The 401 challenges of a route that takes bearer tokens, when the guard takes them. */
  bearerChallenges?: { missing: string; invalidToken: string };
}

/** The challenges of a 401 on this request's route: Bearer first where tokens are taken. */
function challengeOf(context: GuardContext, request: FastifyRequest): string {
  return context.bearerChallenges !== undefined && request.routeOptions.config.bearer === true
    ? context.bearerChallenges.missing
    : API_KEY_CHALLENGE;
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
    invalidToken: failures('invalid_token'),
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
 * The client's address, unless it is past its limit of unknown keys (or tokens): then a 429, before
 * any store lookup.
 */
function notThrottled(
  { unknownKeys, counters }: GuardContext,
  request: FastifyRequest,
  reply: FastifyReply,
): string {
  const address = clientAddress(request);
  const wait = unknownKeys.secondsBlocked(address);
  if (wait > 0) {
    counters.throttled.inc();
    reply.header('retry-after', wait);
    throw new Errors.tooManyInvalidKeys(unknownKeys.perMinute);
  }
  return address;
}

/**
 * A key not cached as existing (`cached`: null when cached as unknown, undefined when not
 * cached at all): refused at once when its address is past its limit of unknown keys, else
 * looked up in the store unless known not to exist, and counted when it does not. A secret the
 * store knows, even an ended one, is never counted: a client retrying an old secret does not
 * lock its successor out.
 */
async function checkUnknown(
  context: GuardContext,
  request: FastifyRequest,
  reply: FastifyReply,
  digest: string,
  cached: null | undefined,
): Promise<SecretMatch> {
  const { unknownKeys, keys, counters } = context;
  const address = notThrottled(context, request, reply);
  const match = cached === null ? null : await fromStore(keys.lookup(digest));
  if (match === null) {
    unknownKeys.count(address);
    counters.unknown.inc();
    throw unauthorized(reply, new Errors.apiKeyInvalid(), challengeOf(context, request));
  }
  return match;
}

/**
 * A request with an OAuth access token instead of a key (a route of `config.bearer`): the token
 * names the secret its grant acts for, which is then checked as if it had been sent itself (its
 * key's state, tier, addresses), and the caller's scopes are those of the grant the key still
 * allows. An unknown, expired or revoked token counts as an unknown key for its address.
 */
async function authenticateToken(
  context: GuardContext,
  bearer: NonNullable<GuardOptions['bearer']>,
  request: FastifyRequest,
  reply: FastifyReply,
  token: string,
): Promise<KeyRecord> {
  const { unknownKeys, keys, counters } = context;
  const challenge = context.bearerChallenges!.invalidToken;
  const address = notThrottled(context, request, reply);
  const grant = await bearer.tokens.grantOf(token);
  const cached = grant && keys.cached(grant.digest);
  const match =
    grant && (cached === undefined ? await fromStore(keys.lookup(grant.digest)) : cached);
  if (grant === null || match === null) {
    unknownKeys.count(address);
    counters.invalidToken.inc();
    throw unauthorized(reply, new Errors.accessTokenInvalid(), challenge);
  }
  const record = admit(context, request, reply, match, grant.digest, challenge);
  const keyScopes = record.scopes;
  request.caller!.scopes =
    keyScopes === null ? grant.scopes : grant.scopes.filter((scope) => keyScopes.includes(scope));
  return record;
}

/**
 * A conditional read (`If-None-Match`) of a catalog route: answered 304 it takes no unit, as
 * GitHub does not count a 304 (docs/api.md#conditional-requests-etag), so its unit is taken by
 * the route when the answer is known: `charge` for anything else, `standing` for the 304.
 * `onCatalogRoute`, when the caller knows it, spares reading the route's options (Fastify builds
 * them anew on each read).
 */
export function chargesOnAnswer(request: FastifyRequest, onCatalogRoute?: boolean): boolean {
  return (
    request.headers['if-none-match'] !== undefined &&
    (request.method === 'GET' || request.method === 'HEAD') &&
    (onCatalogRoute ?? request.routeOptions.config.catalogRoute !== undefined)
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
    const { bearer } = context;
    if (bearer !== undefined && request.routeOptions.config.bearer === true) {
      const token = bearerToken(request.headers.authorization);
      if (token !== undefined) return authenticateToken(context, bearer, request, reply, token);
    }
    counters.missing.inc();
    throw unauthorized(
      reply,
      new Errors.apiKeyMissing(context.portalUrl),
      challengeOf(context, request),
    );
  }
  const digest = typeof key === 'string' ? context.digests.of(key) : undefined;
  if (digest === undefined) {
    counters.malformed.inc();
    throw unauthorized(reply, new Errors.apiKeyInvalid(), challengeOf(context, request));
  }
  const cached = context.keys.cached(digest);
  if (cached) return admit(context, request, reply, cached, digest);
  return checkUnknown(context, request, reply, digest, cached).then((match) =>
    admit(context, request, reply, match, digest),
  );
}

/** The secret's state decides: a working one is let in as the caller, an ended one is a 401. */
function admit(
  context: GuardContext,
  request: FastifyRequest,
  reply: FastifyReply,
  match: SecretMatch,
  digest: string,
  challenge?: string,
): KeyRecord {
  const { counters } = context;
  const state = secretState(match, digest, Date.now());
  if (state.kind === 'ended') {
    counters.ended[state.reason].inc();
    throw unauthorized(reply, endedSecretError(state), challenge ?? challengeOf(context, request));
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

/** An allowed unit counted and told: the guard's and the cached-answer path's one rule. */
function counted(
  { counters, onAdmitted }: GuardContext,
  keyId: string,
  tier: Tier,
  decision: QuotaDecision,
): void {
  counters.byTier[tier].allowed.inc();
  onAdmitted?.(keyId, tier, decision);
}

/** A unit's decision taken: the headers set, counted, and past the quota the 429 thrown. */
function settle(
  context: GuardContext,
  request: FastifyRequest,
  reply: FastifyReply,
  decision: QuotaDecision,
  quotaMs: number,
): void {
  const { tier, keyId } = request.caller!;
  tagRequestSpan(request, tier, quotaMs);
  const tierCounters = context.counters.byTier[tier];
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
  counted(context, keyId, tier, decision);
}

/**
 * The per-request path of every keyed route: check the key (docs/api.md#authentication-errors) from
 * the in-process cache, take one unit of the key's daily quota
 * (docs/api.md#quotas-and-rate-limit-headers), and set the rate-limit headers, which then stay on
 * the response whatever its status.
 */
export function createApiKeyGuard(options: GuardOptions) {
  const { bearer } = options;
  const context: GuardContext = {
    ...options,
    counters: guardCounters(options.metrics, options.quotas),
    digests: new KeyDigests(),
    ...(bearer && {
      bearerChallenges: {
        missing: bearerChallenge(bearer.resourceMetadataUrl),
        invalidToken: bearerChallenge(bearer.resourceMetadataUrl, 'invalid_token'),
      },
    }),
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
      const decision = await (unitTakenAhead(request.raw) ?? quota.consume(id, tier));
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
     * For the cached-answer path, which answers before Fastify sees the request: the record of a
     * key sent as `x-api-key` that the cache knows, whose secret is the current one and that
     * is not bound to addresses. Anything else (unknown, ended or previous secrets, bearer tokens,
     * address-bound keys) is undefined, left to `guard`, which decides it with every rule.
     */
    cachedCaller(key: string | string[] | undefined): KeyRecord | undefined {
      if (typeof key !== 'string' || key === '') return undefined;
      const digest = context.digests.of(key);
      const match = digest === undefined ? undefined : context.keys.cached(digest);
      if (!match || secretState(match, digest!, Date.now()).kind !== 'current') return undefined;
      return match.record.allowedAddresses === null ? match.record : undefined;
    },
    /** The `RateLimit-Policy` of a tier. */
    policyOf(tier: Tier): string {
      return context.counters.byTier[tier].policy;
    },
    /** A unit the cached-answer path took within the quota, counted and told as the guard does. */
    admitted(record: KeyRecord, decision: QuotaDecision): void {
      counted(context, record.id, record.tier, decision);
    },
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
