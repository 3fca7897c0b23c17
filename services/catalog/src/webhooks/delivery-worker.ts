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
  event: WebhookEvent;
  /** W3C trace context of the code that enqueued it (the catalog change), for a span link. */
  trace?: Record<string, string>;
}

export function queuedDelivery(subscription: Subscription, event: WebhookEvent): QueuedDelivery {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return {
    subscriptionId: subscription.id,
    event,
    ...(Object.keys(carrier).length > 0 && { trace: carrier }),
  };
}

export interface DeliveryWorkerOptions extends Omit<DeliverOptions, 'now'> {
  /** The subscription as it is now; null when deleted (its pending deliveries are dropped). */
  lookup: (subscriptionId: string) => Promise<Subscription | null>;
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

/** The last attempts of each subscription that `attempts()` can list. */
export const ATTEMPTS_KEPT_PER_SUBSCRIPTION = 100;
/** Attempts older than this are forgotten (those of deleted subscriptions too). */
export const ATTEMPTS_KEPT_MS = 30 * 24 * 3_600_000;
/**
 * A finished delivery is remembered this long, so that enqueuing the same event again (a
 * replica catching up late) does not deliver it twice.
 */
export const FINISHED_KEPT_MS = 24 * 3_600_000;

/** An attempt that could not be made for a reason of ours (the subscription store failed). */
export const INTERNAL_RETRY_MS = 5_000;

const tracer = trace.getTracer('tool-directory-catalog');

/**
 * Attempt number `attempt` (1 = the first) of a queued delivery: one POST, in a
 * `webhook.deliver` span, counted, and turned into what the queue records; its `nextAttemptAt`
 * (counted from the attempt's end) says when to try again, if ever. Null when the subscription is gone or disabled: the delivery is dropped.
 * Throws only when the subscription cannot be looked up; the queue then tries again later
 * without counting an attempt.
 */
export async function attemptDelivery(
  delivery: QueuedDelivery,
  attempt: number,
  options: DeliveryWorkerOptions,
): Promise<DeliveryAttempt | null> {
  const subscription = await options.lookup(delivery.subscriptionId);
  if (!subscription || subscription.disabledAt !== null) return null;
  const { event } = delivery;
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
