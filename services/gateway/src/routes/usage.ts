import { type Static, Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { SCOPES } from '../../../shared/contract';
import type { LastUse } from '../keys/last-use';
import { ErrorBody } from '../../../shared/openapi';
import { TIERS, type Tier } from '../../../shared/tiers';
import { HISTORY_DAYS, type QuotaLimiter } from '../quota/quota-limiter';

const UsageDay = Type.Object({
  date: Type.String({ format: 'date', description: 'A UTC day' }),
  used: Type.Integer({ minimum: 0, description: 'Requests that day that took a unit' }),
});

const Usage = Type.Object(
  {
    data: Type.Object({
      keyId: Type.String(),
      tier: Type.Union(TIERS.map((tier) => Type.Literal(tier))),
      limit: Type.Integer({ description: 'The daily quota of the tier' }),
      used: Type.Integer({ minimum: 0, description: 'Units used today (UTC)' }),
      remaining: Type.Integer({ minimum: 0, description: 'Units left today, never negative' }),
      resetAt: Type.String({ format: 'date-time', description: 'The next 00:00:00 UTC' }),
      lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
        description: 'The minute of the last request that took a unit; null: none yet',
      }),
      expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
        description: 'When the key stops working; null: never',
      }),
      scopes: Type.Union(
        [Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s)))), Type.Null()],
        {
          description: "A restricted key's scopes; null: everything its tier allows",
        },
      ),
      allowedAddresses: Type.Union([Type.Array(Type.String()), Type.Null()], {
        description: 'The addresses (CIDRs) a restricted key may be used from; null: any',
      }),
      history: Type.Array(UsageDay, {
        minItems: HISTORY_DAYS,
        maxItems: HISTORY_DAYS,
        description: `The last ${HISTORY_DAYS} UTC days, today first`,
      }),
    }),
    meta: Type.Object({ attribution: Type.String() }),
  },
  { $id: 'Usage', description: "The calling key's use of its quota" },
);
type Usage = Static<typeof Usage>;

export interface UsageOptions {
  quota: QuotaLimiter;
  quotas: Record<Tier, number>;
  attribution: string;
  lastUse: LastUse;
}

/** The later of two ISO instants, either of which may be missing. */
function later(a: string | null, b: string | undefined): string | null {
  return b !== undefined && (a === null || b > a) ? b : a;
}

/**
 * `GET /v1/usage`: the calling key's use today and on each of the last 30 UTC days, from the
 * quota's own daily counters. Free of quota like GitHub's `/rate_limit` (`quotaCost: 0`: the key
 * is checked and the rate-limit headers set, no unit taken), so a key past its quota still gets
 * its 200.
 */
export const usageRoutes: FastifyPluginAsyncTypebox<UsageOptions> = async (
  app,
  { quota, quotas, attribution, lastUse },
) => {
  app.get(
    '/v1/usage',
    {
      config: { quotaCost: 0, scope: 'usage' },
      schema: {
        summary: "The calling key's usage",
        operationId: 'getUsage',
        description:
          'Today’s use, the limit and its reset, and the last 30 UTC days. Takes no unit of the quota: the rate-limit headers describe the quota as it stands.',
        tags: ['keys'],
        response: { 200: Usage, 401: ErrorBody, 429: ErrorBody },
      },
    },
    async (request): Promise<Usage> => {
      const { keyId, tier } = request.caller!;
      const { expiresAt, scopes, allowedAddresses, lastUsedAt } = request.keyRecord!;
      const history = await quota.history(keyId);
      const limit = quotas[tier];
      const used = history[0]!.used;
      const midnight = Date.parse(history[0]!.date) + 86_400_000;
      return {
        data: {
          keyId,
          tier,
          limit,
          used,
          remaining: Math.max(0, limit - used),
          resetAt: new Date(midnight).toISOString(),
          // The cached record's, or this replica's own newer note: the store's is written within
          // LAST_USE_FLUSH_MS, and other replicas' uses show once the key is read again.
          lastUsedAt: later(lastUsedAt, lastUse.seen(keyId)),
          expiresAt,
          scopes,
          allowedAddresses,
          history,
        },
        meta: { attribution },
      };
    },
  );
};
