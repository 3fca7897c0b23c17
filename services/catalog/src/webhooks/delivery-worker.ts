import { type Link, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { type DeliverOptions, deliverOnce } from './deliver';
import { retryDelay } from './retry-schedule';
import type { WebhookMetrics } from './webhook-metrics';
import type { DeliveryAttempt, Subscription, WebhookEvent } from './webhook-types';

/**
 * What a queue holds for one event to one subscription. The subscription's URL and secret are
 * looked up at each attempt, never copied into the queue: a changed or deleted subscription is
 * seen at once, and no secret sits in Redis.
 */
export interface QueuedDelivery {
  subscriptionId: string;
  /** The key that owns the subscription (SubscriptionStore.get wants it). */
  keyId: string;
  event: WebhookEvent;
  /** W3C trace context of the code that enqueued it (the catalog change), for a span link. */
  trace?: Record<string, string>;
}

export function queuedDelivery(subscription: Subscription, event: WebhookEvent): QueuedDelivery {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return {
    subscriptionId: subscription.id,
    keyId: subscription.keyId,
    event,
    ...(Object.keys(carrier).length > 0 && { trace: carrier }),
  };
}

export interface DeliveryWorkerOptions extends Omit<DeliverOptions, 'now'> {
  /**
   * The subscription as it is now; null when deleted (its pending deliveries are dropped, as
   * they are when it is disabled).
   */
  lookup: (subscriptionId: string, keyId: string) => Promise<Subscription | null>;
  /** Called when the receiver answers 410 Gone. */
  disable: (subscriptionId: string) => Promise<void>;
  /** Waits before each retry, in milliseconds (parseRetrySchedule). */
  schedule: readonly number[];
  metrics?: WebhookMetrics;
  logger?: Pick<Logger, 'info' | 'warn'>;
  /** For the jitter; tests pin it. */
  random?: () => number;
}

/** Runs the deliveries of a queue until closed; close() lets attempts in flight finish. */
export interface DeliveryWorker {
  start(): Promise<void>;
  close(): Promise<void>;
}

/** How much a queue keeps of what is over. */
export const RETENTION = {
  /** The last attempts of each subscription that `attempts()` can list. */
  attemptsPerSubscription: 100,
  /** Attempts older than this are forgotten (those of deleted subscriptions too). */
  attemptsMs: 30 * 24 * 3_600_000,
  /**
   * A finished delivery is remembered this long, so that enqueuing the same event again (a
   * replica catching up late) does not deliver it twice.
   */
  finishedMs: 24 * 3_600_000,
};

/**
 * An attempt that could not be made for a reason of ours (the subscription store failed) is
 * made this much later, and not counted: the receiver did nothing wrong.
 */
export const POSTPONE_MS = 5_000;

const tracer = trace.getTracer('tool-directory-catalog');

/**
 * Attempt number `attempt` (1 = the first) of a queued delivery: one POST, in a
 * `webhook.deliver` span, counted, and turned into what the queue records; its `nextAttemptAt`
 * (counted from the attempt's end) says when to try again, if ever. `dropped` when the
 * subscription is gone or disabled; `postponed` when it could not be looked up (the queue tries
 * again after POSTPONE_MS without counting an attempt).
 */
export async function attemptDelivery(
  delivery: QueuedDelivery,
  attempt: number,
  options: DeliveryWorkerOptions,
): Promise<DeliveryAttempt | 'dropped' | 'postponed'> {
  const { event } = delivery;
  let subscription: Subscription | null;
  try {
    subscription = await options.lookup(delivery.subscriptionId, delivery.keyId);
  } catch (err) {
    options.logger?.warn(
      { err: (err as Error).message, event: event.id },
      'Webhook delivery postponed: the subscription could not be read',
    );
    return 'postponed';
  }
  if (!subscription || subscription.disabledAt !== null) return 'dropped';
  return tracer.startActiveSpan(
    'webhook.deliver',
    {
      attributes: {
        'webhook.event.type': event.type,
        'webhook.event.id': event.id,
        'webhook.subscription.id': subscription.id,
        'webhook.attempt': attempt,
      },
      links: linkTo(delivery.trace),
    },
    async (span) => {
      try {
        const at = new Date();
        const result = await deliverOnce(subscription, event, { ...options, now: () => at });
        let outcome: DeliveryAttempt['outcome'] = 'delivered';
        let retryInMs: number | null = null;
        if (result.outcome === 'gone') {
          outcome = 'disabled';
          await options.disable(subscription.id).catch((err: Error) =>
            // The next event's delivery meets the 410 again and tries again.
            options.logger?.warn(
              { err: err.message, subscription: subscription.id },
              'Disabling a webhook subscription failed',
            ),
          );
        } else if (result.outcome === 'failed') {
          retryInMs = retryDelay(options.schedule, attempt, result.retryAfterMs, options.random);
          outcome = retryInMs === null ? 'failed' : 'retrying';
        }
        const statusCode = result.statusCode;
        const error = result.outcome === 'failed' ? result.error : null;
        span.setAttributes({
          'webhook.outcome': outcome,
          ...(statusCode !== null && { 'http.response.status_code': statusCode }),
        });
        if (outcome !== 'delivered') {
          span.setStatus({ code: SpanStatusCode.ERROR, message: error ?? `HTTP ${statusCode}` });
        }
        options.metrics?.attempted(event.type, outcome);
        if (outcome === 'failed' || outcome === 'disabled') {
          options.logger?.warn(
            { subscription: subscription.id, event: event.id, attempt, statusCode, error, outcome },
            outcome === 'failed'
              ? 'Webhook delivery failed for good'
              : 'Webhook subscription disabled (410 Gone)',
          );
        }
        return {
          eventId: event.id,
          type: event.type,
          attempt,
          at: at.toISOString(),
          statusCode,
          error,
          outcome,
          nextAttemptAt: retryInMs === null ? null : new Date(Date.now() + retryInMs).toISOString(),
        };
      } finally {
        span.end();
      }
    },
  );
}

function linkTo(carrier: Record<string, string> | undefined): Link[] {
  if (!carrier) return [];
  const spanContext = trace.getSpanContext(propagation.extract(context.active(), carrier));
  return spanContext ? [{ context: spanContext }] : [];
}
