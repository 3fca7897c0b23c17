import type { FastifyReply, FastifyRequest } from 'fastify';
import '../../../services/shared/caller';
import { Errors } from '../../../services/shared/errors';
import { tagRequestSpan } from '../../../services/shared/span-attributes';
import { TIER_LABELS, type Tier } from '../../../services/shared/tiers';
import { isWellFormedKey, keyDigest } from '../keys/api-key';
import type { KeyCache } from '../keys/key-cache';
import type { KeyRecord } from '../keys/key-store';
import type { GatewayMetrics } from '../metrics';
import type { QuotaLimiter } from '../quota/quota-limiter';
import { ratePolicy, setRateLimitHeaders } from '../quota/rate-limit-headers';

type DecisionCounter = ReturnType<GatewayMetrics['quotaDecisions']['labels']>;

export interface GuardOptions {
  keys: KeyCache;
  quota: QuotaLimiter;
  quotas: Record<Tier, number>;
  metrics: GatewayMetrics;
  /** Developer portal URL, named in the "missing key" message. */
  portalUrl: string;
}

/**
 * The per-request path of every keyed route: check the key (SPEC B3) from the in-process
 * cache, take one unit of the daily quota (B4), and set the rate-limit headers, which then
 * stay on the response whatever its status.
 */
export function createApiKeyGuard({ keys, quota, quotas, metrics, portalUrl }: GuardOptions) {
  // Per tier, once: the policy header and the metric children, so a request only looks them up.
  const byTier = Object.fromEntries(
    (Object.keys(quotas) as Tier[]).map((tier) => [
      tier,
      {
        policy: ratePolicy(quotas[tier]),
        allowed: metrics.quotaDecisions.labels(tier, 'allowed'),
        rejected: metrics.quotaDecisions.labels(tier, 'rejected'),
      },
    ]),
  ) as Record<Tier, { policy: string; allowed: DecisionCounter; rejected: DecisionCounter }>;
  const missing = metrics.authFailures.labels('missing');
  const malformed = metrics.authFailures.labels('malformed');
  const unknown = metrics.authFailures.labels('unknown');
  const revoked = metrics.authFailures.labels('revoked');

  /** A store lookup, for a key the cache does not know yet. */
  async function fromStore(pending: Promise<KeyRecord | null>): Promise<KeyRecord | null> {
    try {
      return await pending;
    } catch {
      throw new Errors.keyStoreUnavailable();
    }
  }

  return async function apiKeyGuard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const key = request.headers['x-api-key'];
    if (key === undefined || key === '') {
      missing.inc();
      throw new Errors.apiKeyMissing(portalUrl);
    }
    if (typeof key !== 'string' || !isWellFormedKey(key)) {
      malformed.inc();
      throw new Errors.apiKeyInvalid();
    }
    const cached = keys.lookup(keyDigest(key));
    const record = cached instanceof Promise ? await fromStore(cached) : cached;
    if (record === null) {
      unknown.inc();
      throw new Errors.apiKeyInvalid();
    }
    if (record.revokedAt !== null) {
      revoked.inc();
      throw new Errors.apiKeyInvalid();
    }

    const { tier } = record;
    request.caller = { tier, keyId: record.id };
    tagRequestSpan(request, tier);
    const decision = await quota.consume(record.id, tier);
    const counters = byTier[tier];
    setRateLimitHeaders(reply, decision, counters.policy);
    if (!decision.allowed) {
      counters.rejected.inc();
      reply.header('retry-after', decision.secondsToReset);
      throw new Errors.quotaExceeded(
        TIER_LABELS[tier],
        decision.limit,
        new Date(decision.resetAt * 1000).toISOString(),
      );
    }
    counters.allowed.inc();
  };
}
