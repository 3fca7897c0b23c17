import { Type } from '@sinclair/typebox';
import { MAX_SUBSCRIPTIONS_PER_KEY, SUBSCRIBABLE_EVENTS } from '../webhooks/webhook-types';

/**
 * Request and response schemas of the webhook routes (SPEC B7, B10). A schema's `$id` is its
 * name in the OpenAPI document.
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
    description: Type.Optional(Type.String({ maxLength: 500 })),
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
