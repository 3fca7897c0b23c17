import { type TSchema, Type } from '@sinclair/typebox';
import { TIERS } from '../../../shared/tiers';
import { humanText } from '../../../shared/trimmed-fields';
import {
  MAX_SUBSCRIPTIONS_PER_KEY,
  SUBSCRIBABLE_EVENTS,
  type WebhookEventType,
} from '../webhooks/webhook-types';
import { FullTool } from './tool';

/**
 * Request and response schemas of the webhook routes (docs/api.md#enterprise-export-and-webhooks,
 * docs/api.md#webhook-events-and-deliveries). A schema's `$id` is its name in the OpenAPI document.
 */

const EventType = Type.Union(
  SUBSCRIBABLE_EVENTS.map((event) => Type.Literal(event)),
  { description: 'An event to deliver' },
);

export const WebhookRequest = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'Where events are POSTed: https, on a host that resolves to public addresses only',
    }),
    events: Type.Array(EventType, { minItems: 1, uniqueItems: true }),
    description: Type.Optional(humanText({ maxLength: 500, lines: 'several' })),
  },
  { $id: 'WebhookRequest', description: 'A new webhook subscription' },
);

const webhookFields = {
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(EventType),
  description: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
};

export const Webhook = Type.Object(
  {
    ...webhookFields,
    disabledAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the receiver answered 410 Gone; nothing is delivered since',
    }),
  },
  { $id: 'Webhook', description: 'A webhook subscription (its secret is shown only once)' },
);

export const CreatedWebhook = Type.Object(
  {
    ...webhookFields,
    secret: Type.String({
      pattern: '^whsec_',
      description:
        'Shown once: the Standard Webhooks signing secret (whsec_ + base64 of 32 random bytes)',
    }),
  },
  { $id: 'CreatedWebhook', description: 'The new subscription with its signing secret' },
);

export const WebhookList = Type.Object(
  {
    data: Type.Array(Webhook),
    meta: Type.Object({
      total: Type.Integer({ description: `At most ${MAX_SUBSCRIPTIONS_PER_KEY} per key` }),
    }),
  },
  { $id: 'WebhookList', description: "The key's webhook subscriptions, oldest first" },
);

export const WebhookParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100, description: 'Webhook id' }),
});

export const QueuedEvent = Type.Object(
  { eventId: Type.String({ description: 'The webhook-id header of the delivery' }) },
  { $id: 'QueuedEvent', description: 'The ping event, queued for delivery' },
);

const DeliveryAttempt = Type.Object(
  {
    eventId: Type.String(),
    type: Type.Union([...SUBSCRIBABLE_EVENTS, 'ping' as const].map((t) => Type.Literal(t))),
    attempt: Type.Integer({ minimum: 1 }),
    at: Type.String({ format: 'date-time' }),
    statusCode: Type.Union([Type.Integer(), Type.Null()], {
      description: "The receiver's status code; null when no answer came",
    }),
    error: Type.Union([Type.String(), Type.Null()]),
    outcome: Type.Union(
      ['delivered', 'retrying', 'failed', 'disabled'].map((o) => Type.Literal(o)),
    ),
    nextAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { $id: 'DeliveryAttempt' },
);

export const DeliveryAttemptList = Type.Object(
  {
    data: Type.Array(DeliveryAttempt),
    meta: Type.Object({ limit: Type.Integer({ description: 'At most this many, newest first' }) }),
  },
  { $id: 'DeliveryAttemptList', description: 'Recent delivery attempts, newest first' },
);

/** The body of one delivery: the same envelope for every event, `data` as the type says. */
function event($id: string, type: WebhookEventType, data: TSchema, description: string) {
  return Type.Object(
    {
      type: Type.Literal(type),
      timestamp: Type.String({ format: 'date-time', description: 'When the event happened' }),
      data,
    },
    { $id, description },
  );
}

/**
 * What each event delivers (the OpenAPI document's `webhooks`): typed by event, so an event
 * type without its schema does not compile.
 */
export const WEBHOOK_EVENTS: Record<WebhookEventType, { summary: string; body: TSchema }> = {
  'tool.created': {
    summary: 'A tool was added to the catalog',
    body: event('ToolCreatedEvent', 'tool.created', FullTool, 'The full record of the new tool'),
  },
  'tool.updated': {
    summary: 'A tool was changed',
    body: event(
      'ToolUpdatedEvent',
      'tool.updated',
      Type.Intersect([
        FullTool,
        Type.Object({
          changedFields: Type.Array(Type.String(), {
            minItems: 1,
            description: 'The top-level fields whose value changed',
          }),
        }),
      ]),
      'The full record after the change, and which fields changed',
    ),
  },
  'tool.deleted': {
    summary: 'A tool was deleted',
    body: event(
      'ToolDeletedEvent',
      'tool.deleted',
      Type.Object({ slug: Type.String(), name: Type.String() }),
      'The slug and name the deleted tool had',
    ),
  },
  'quota.warning': {
    summary: "The subscription's key has used 80% of its daily quota",
    body: event(
      'QuotaWarningEvent',
      'quota.warning',
      Type.Object({
        keyId: Type.String(),
        tier: Type.Union(TIERS.map((tier) => Type.Literal(tier))),
        limit: Type.Integer({ minimum: 1, description: 'The daily quota' }),
        remaining: Type.Integer({ minimum: 0, description: 'Units left after the request' }),
        resetAt: Type.String({ format: 'date-time', description: 'The next 00:00:00 UTC' }),
      }),
      'Sent once per key and UTC day',
    ),
  },
  ping: {
    summary: 'A test event, sent on request',
    body: event(
      'PingEvent',
      'ping',
      Type.Object({ webhookId: Type.String() }),
      'Sent by `POST /v1/webhooks/{id}/test`',
    ),
  },
};
