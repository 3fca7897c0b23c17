import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { INTERNAL_PATHS } from '../../../shared/contract';
import { ErrorBody } from '../schemas/api';
import type { QuotaWarningRouteOptions } from '../webhooks/webhook-types';

/**
 * What the gateway reports when a key has used 80% of its daily quota
 * (docs/api.md#enterprise-export-and-webhooks).
 */
export const QuotaWarningBody = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, description: 'The daily quota' }),
    remaining: Type.Integer({ minimum: 0, description: 'Units left after the request' }),
    resetAt: Type.String({ format: 'date-time', description: 'The next 00:00:00 UTC' }),
    at: Type.String({ format: 'date-time', description: 'When the key passed 80%' }),
  },
  { additionalProperties: false },
);

const DAY_MS = 86_400_000;

/**
 * `POST /internal/v1/quota-warnings`, called by the gateway (with its internal token, the key
 * as the caller) when a key passes 80% of its daily quota: one `quota.warning` event per
 * subscription of the key. Every gateway replica may report the same crossing; the event id
 * names the key, the quota's UTC day and the subscription, and the queue takes an id once, so
 * each subscription hears of it once a day. Never routed by the gateway's proxy.
 */
export const internalQuotaWarningRoutes: FastifyPluginAsyncTypebox<
  QuotaWarningRouteOptions
> = async (app, { subscriptions, queue }) => {
  app.post(
    INTERNAL_PATHS.quotaWarnings,
    {
      schema: {
        hide: true,
        body: QuotaWarningBody,
        response: { 202: Type.Null(), 400: ErrorBody, 401: ErrorBody },
      },
    },
    async (request, reply) => {
      const { keyId, tier } = request.caller!;
      const { limit, remaining, resetAt, at } = request.body;
      // The day the quota counts, from the gateway's window: not this process's clock.
      const day = new Date(Date.parse(resetAt) - DAY_MS).toISOString().slice(0, 10);
      const data = { keyId, tier, limit, remaining, resetAt };
      for (const subscription of await subscriptions.matching('quota.warning', keyId)) {
        await queue.enqueue(subscription, {
          id: `evt_quota_${keyId}_${day}_${subscription.id}`,
          type: 'quota.warning',
          timestamp: at,
          data,
        });
      }
      return reply.code(202).send(null);
    },
  );
};
