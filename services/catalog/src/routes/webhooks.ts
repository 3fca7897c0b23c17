import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { jsonBodyValidator } from '../../../shared/body-validator';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { randomBytes, randomUUID } from 'node:crypto';
import { Errors } from '../../../shared/errors';
import { ErrorBody } from '../schemas/api';
import {
  CreatedWebhook,
  DeliveryAttemptList,
  QueuedEvent,
  Webhook,
  WebhookList,
  WebhookParams,
  WebhookRequest,
} from '../schemas/webhooks';
import { UnresolvableUrlError, UnsafeUrlError, checkWebhookUrl } from '../webhooks/ssrf-guard';
import {
  MAX_SUBSCRIPTIONS_PER_KEY,
  type Subscription,
  TooManySubscriptionsError,
  type WebhookRoutesOptions,
} from '../webhooks/webhook-types';

/** How many attempts `GET /webhooks/{id}/deliveries` lists. */
export const DELIVERIES_LISTED = 50;

/** A subscription as its key sees it after creation: everything but the secret. */
function shown({ id, url, events, description, createdAt, disabledAt }: Subscription) {
  return { id, url, events, description, createdAt, disabledAt };
}

/** `whsec_` + base64 of 32 random bytes: the Standard Webhooks form of a signing secret. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

type WebhookApp = Parameters<FastifyPluginAsyncTypebox<WebhookRoutesOptions>>[0];
/** The calling key's subscription named by the path, or the 404 of one that does not exist. */
type Owned = (request: FastifyRequest<{ Params: { id: string } }>) => Promise<Subscription>;

const tags = ['webhooks'];
const refusals = { 403: ErrorBody };
const notFound = { ...refusals, 400: ErrorBody, 404: ErrorBody };

/**
 * The webhook subscriptions of Enterprise keys (docs/api.md#enterprise-export-and-webhooks,
 * docs/api.md#webhook-events-and-deliveries), registered under `/v1`. Each key sees only its own:
 * another key's id is a 404, like one that does not exist.
 */
export const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRoutesOptions> = async (
  app,
  options,
) => {
  const { subscriptions } = options;
  // Every call tells the store what the gateway says of the key (active, of this tier), also
  // a call its tier refuses (this hook of the plugin's runs before the routes' own tier check):
  // the key-status feed is the main source, this one never lags a call. Not recording it only
  // leaves the feed's word, so a failure (a full disk) refuses no call.
  app.addHook('onRequest', async (request) => {
    const { keyId, tier } = request.caller!;
    await subscriptions
      .setKeyStatus({ keyId, tier, revoked: false })
      .catch((err: unknown) => request.log.warn({ err }, 'key status not recorded'));
  });
  const owned: Owned = async (request) => {
    const subscription = await subscriptions.get(request.caller!.keyId, request.params.id);
    if (!subscription) throw new Errors.webhookNotFound(request.params.id);
    return subscription;
  };
  subscribe(app, options);
  listSubscriptions(app, options);
  showSubscription(app, owned);
  deleteSubscription(app, options);
  sendPing(app, options, owned);
  listDeliveries(app, options, owned);
};

/** `POST /webhooks`: a new subscription, its signing secret shown once. */
function subscribe(
  app: WebhookApp,
  { subscriptions, allowPrivate, resolve }: WebhookRoutesOptions,
): void {
  app.post(
    '/webhooks',
    {
      schema: {
        summary: 'Subscribe to events',
        operationId: 'createWebhook',
        description:
          `Events are POSTed to the URL, signed as Standard Webhooks. The signing secret is ` +
          `in this answer only. At most ${MAX_SUBSCRIPTIONS_PER_KEY} per key. Enterprise keys only.`,
        tags,
        body: WebhookRequest,
        response: {
          201: CreatedWebhook,
          400: ErrorBody,
          ...refusals,
          413: ErrorBody,
          415: ErrorBody,
        },
      },
      validatorCompiler: jsonBodyValidator,
    },
    async (request, reply) => {
      const { url, events, description = null } = request.body;
      let checked;
      try {
        checked = await checkWebhookUrl(url, { allowPrivate, resolve });
      } catch (err) {
        if (err instanceof UnsafeUrlError || err instanceof UnresolvableUrlError) {
          throw new Errors.webhookUrlRefused(err.message);
        }
        throw err;
      }
      const subscription: Subscription = {
        id: `wh_${randomUUID().replaceAll('-', '')}`,
        keyId: request.caller!.keyId,
        url: checked.url.href,
        events,
        description,
        secret: newSecret(),
        createdAt: new Date().toISOString(),
        disabledAt: null,
      };
      try {
        await subscriptions.create(subscription);
      } catch (err) {
        if (err instanceof TooManySubscriptionsError) {
          throw new Errors.tooManyWebhooks(MAX_SUBSCRIPTIONS_PER_KEY);
        }
        throw err;
      }
      request.log.info({ webhookId: subscription.id, events }, 'webhook subscribed');
      const { id, createdAt, secret } = subscription;
      return reply
        .code(201)
        .send({ id, url: subscription.url, events, description, createdAt, secret });
    },
  );
}

/** `GET /webhooks`: the key's subscriptions, without their secrets. */
function listSubscriptions(app: WebhookApp, { subscriptions }: WebhookRoutesOptions): void {
  app.get(
    '/webhooks',
    {
      schema: {
        summary: "List the key's webhooks",
        operationId: 'listWebhooks',
        description: 'Oldest first, without their secrets. Enterprise keys only.',
        tags,
        response: { 200: WebhookList, ...refusals },
      },
    },
    async (request) => {
      const data = (await subscriptions.list(request.caller!.keyId)).map(shown);
      return { data, meta: { total: data.length } };
    },
  );
}

/** `GET /webhooks/{id}`. */
function showSubscription(app: WebhookApp, owned: Owned): void {
  app.get(
    '/webhooks/:id',
    {
      schema: {
        summary: 'Get a webhook',
        operationId: 'getWebhook',
        description: 'Without its secret. Enterprise keys only.',
        tags,
        params: WebhookParams,
        response: { 200: Webhook, ...notFound },
      },
    },
    async (request) => shown(await owned(request)),
  );
}

/** `DELETE /webhooks/{id}`. */
function deleteSubscription(app: WebhookApp, { subscriptions }: WebhookRoutesOptions): void {
  app.delete(
    '/webhooks/:id',
    {
      schema: {
        summary: 'Delete a webhook',
        operationId: 'deleteWebhook',
        description: 'Nothing more is delivered to it. Enterprise keys only.',
        tags,
        params: WebhookParams,
        response: { 204: Type.Null({ description: 'Deleted' }), ...notFound },
      },
    },
    async (request, reply) => {
      const deleted = await subscriptions.delete(request.caller!.keyId, request.params.id);
      if (!deleted) throw new Errors.webhookNotFound(request.params.id);
      request.log.info({ webhookId: request.params.id }, 'webhook deleted');
      return reply.code(204).send(null);
    },
  );
}

/** `POST /webhooks/{id}/test`: queues a `ping` event. */
function sendPing(app: WebhookApp, { queue }: WebhookRoutesOptions, owned: Owned): void {
  app.post(
    '/webhooks/:id/test',
    {
      schema: {
        summary: 'Send a ping event',
        operationId: 'testWebhook',
        description:
          'Queues a `ping` event with data `{webhookId}`; its attempts show in the deliveries. ' +
          'Enterprise keys only.',
        tags,
        params: WebhookParams,
        response: { 202: QueuedEvent, ...notFound, 409: ErrorBody },
      },
    },
    async (request, reply) => {
      const subscription = await owned(request);
      if (subscription.disabledAt) {
        throw new Errors.webhookDisabled(subscription.id, subscription.disabledAt);
      }
      const eventId = `evt_ping_${randomUUID().replaceAll('-', '')}`;
      await queue.enqueue(subscription, {
        id: eventId,
        type: 'ping',
        timestamp: new Date().toISOString(),
        data: { webhookId: subscription.id },
      });
      return reply.code(202).send({ eventId });
    },
  );
}

/** `GET /webhooks/{id}/deliveries`: the last attempts, newest first. */
function listDeliveries(app: WebhookApp, { queue }: WebhookRoutesOptions, owned: Owned): void {
  app.get(
    '/webhooks/:id/deliveries',
    {
      schema: {
        summary: 'Recent delivery attempts',
        operationId: 'listWebhookDeliveries',
        description: `The last ${DELIVERIES_LISTED} attempts, newest first. Enterprise keys only.`,
        tags,
        params: WebhookParams,
        response: { 200: DeliveryAttemptList, ...notFound },
      },
    },
    async (request) => {
      const subscription = await owned(request);
      const data = await queue.attempts(subscription.id, DELIVERIES_LISTED);
      return { data, meta: { limit: DELIVERIES_LISTED } };
    },
  );
}
