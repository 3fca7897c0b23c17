import type { Tier } from '../../../shared/tiers';
import type { Resolver } from './ssrf-guard';

/**
 * The events a subscription may ask for (docs/api.md#enterprise-export-and-webhooks). `ping` is
 * sent on demand, never subscribed.
 */
export const SUBSCRIBABLE_EVENTS = [
  'tool.created',
  'tool.updated',
  'tool.deleted',
  'quota.warning',
] as const;
export type SubscribableEvent = (typeof SUBSCRIBABLE_EVENTS)[number];
export type WebhookEventType = SubscribableEvent | 'ping';

/** At most this many subscriptions per API key (docs/api.md#enterprise-export-and-webhooks). */
export const MAX_SUBSCRIPTIONS_PER_KEY = 10;

/** A subscription as stored. The secret is shown once, at creation, and never listed again. */
export interface Subscription {
  id: string;
  /** The API key that owns it: only that key sees or touches it. */
  keyId: string;
  url: string;
  events: SubscribableEvent[];
  description: string | null;
  /** `whsec_` + base64 of random bytes (Standard Webhooks). */
  secret: string;
  createdAt: string;
  /** Set when the receiver answered 410 Gone: nothing is delivered any more. */
  disabledAt: string | null;
}

/**
 * The owning key as the catalog last heard of it (from the gateway's headers on each webhook
 * call, and from the `key-status` change feed topic): deliveries need an active Enterprise key.
 */
export interface KeyStatus {
  keyId: string;
  tier: Tier;
  revoked: boolean;
}

/**
 * One event, as delivered: docs/api.md#webhook-events-and-deliveries's body. `id` is the
 * `webhook-id`, stable across retries.
 */
export interface WebhookEvent {
  /** Unique per event and subscription, e.g. `evt_<catalog version>_<subscription id>`. */
  id: string;
  type: WebhookEventType;
  timestamp: string;
  data: Record<string, unknown>;
}

/**
 * One attempt at delivering an event to a subscription, as `GET /webhooks/{id}/deliveries` lists
 * it.
 */
export interface DeliveryAttempt {
  eventId: string;
  type: WebhookEventType;
  attempt: number;
  at: string;
  /** The receiver's status code, or null when no answer came (see `error`). */
  statusCode: number | null;
  error: string | null;
  outcome: 'delivered' | 'retrying' | 'failed' | 'disabled';
  /** When the next attempt is due, if one is. */
  nextAttemptAt: string | null;
}

/** Where subscriptions live: the embedded store under DATA_DIR, or MongoDB. */
export interface SubscriptionStore {
  /** Rejects with TooManySubscriptionsError past MAX_SUBSCRIPTIONS_PER_KEY for the key. */
  create(subscription: Subscription): Promise<void>;
  list(keyId: string): Promise<Subscription[]>;
  /** Null when it does not exist or belongs to another key. */
  get(keyId: string, id: string): Promise<Subscription | null>;
  /** False when it does not exist or belongs to another key. */
  delete(keyId: string, id: string): Promise<boolean>;
  /** Active subscriptions to `type` whose key is an active Enterprise key; of one key if given. */
  matching(type: SubscribableEvent, keyId?: string): Promise<Subscription[]>;
  disable(id: string, at: string): Promise<void>;
  /** Records what the catalog last heard of a key. */
  setKeyStatus(status: KeyStatus): Promise<void>;
  close(): Promise<void>;
}

export class TooManySubscriptionsError extends Error {
  override name = 'TooManySubscriptionsError';
  constructor() {
    super(`A key may hold at most ${MAX_SUBSCRIPTIONS_PER_KEY} webhook subscriptions`);
  }
}

/**
 * The durable delivery queue: SQLite under DATA_DIR when there is no Redis, BullMQ on Redis
 * otherwise. Enqueuing is idempotent by `event.id` (the same event for the same subscription is
 * queued once, also when two catalog replicas both try), and a queued delivery survives a
 * kill -9 of any process: it is attempted after the restart.
 */
export interface DeliveryQueue {
  enqueue(subscription: Subscription, event: WebhookEvent): Promise<void>;
  /** The most recent attempts for a subscription, newest first. */
  attempts(subscriptionId: string, limit: number): Promise<DeliveryAttempt[]>;
  /** Deliveries waiting or being retried, and the age of the oldest, for the metrics. */
  backlog(): Promise<{ pending: number; oldestPendingSeconds: number }>;
  close(): Promise<void>;
}

/** What the webhook routes are given. */
export interface WebhookRoutesOptions {
  subscriptions: SubscriptionStore;
  queue: DeliveryQueue;
  /** WEBHOOK_ALLOW_PRIVATE: http and private addresses allowed (development only). */
  allowPrivate: boolean;
  /** How host names are resolved for the SSRF check; the system's resolver by default. */
  resolve?: Resolver;
}

/** What the catalog's quota-warning route is given. */
export interface QuotaWarningRouteOptions {
  subscriptions: Pick<SubscriptionStore, 'matching'>;
  queue: Pick<DeliveryQueue, 'enqueue'>;
}
