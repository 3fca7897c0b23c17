import { Counter, Gauge, type Registry } from 'prom-client';
import type { DeliveryAttempt, DeliveryQueue, WebhookEventType } from './webhook-types';

/** Counts what the delivery worker does; the queue's backlog is read at each scrape. */
export interface WebhookMetrics {
  attempted(type: WebhookEventType, outcome: DeliveryAttempt['outcome']): void;
}

/** A scrape reads both gauges; one `backlog()` serves both. */
const BACKLOG_FRESH_MS = 1_000;

/**
 * `catalog_webhook_deliveries_total{event,outcome}` (one per attempt, by what it came to:
 * delivered, retrying, failed, disabled), `catalog_webhook_attempts_total{event}`, and the
 * gauges `catalog_webhook_queue_depth` and `catalog_webhook_oldest_pending_seconds`.
 */
export function webhookMetrics(registry: Registry, queue: DeliveryQueue): WebhookMetrics {
  const deliveries = new Counter({
    name: 'catalog_webhook_deliveries_total',
    help: 'Webhook delivery attempts by event type and what they came to (delivered, retrying, failed, disabled)',
    labelNames: ['event', 'outcome'] as const,
    registers: [registry],
  });
  const attempts = new Counter({
    name: 'catalog_webhook_attempts_total',
    help: 'Webhook delivery attempts (HTTP requests tried) by event type',
    labelNames: ['event'] as const,
    registers: [registry],
  });

  let read: { at: number; backlog: ReturnType<DeliveryQueue['backlog']> } | undefined;
  // When the queue cannot be read (Redis down), the gauges keep their last value rather than
  // failing the whole scrape; the Redis metrics and logs tell of the outage.
  const collectBacklog = async (
    set: (b: Awaited<ReturnType<DeliveryQueue['backlog']>>) => void,
  ) => {
    if (!read || Date.now() - read.at > BACKLOG_FRESH_MS) {
      read = { at: Date.now(), backlog: queue.backlog() };
    }
    await read.backlog.then(set, () => undefined);
  };
  new Gauge({
    name: 'catalog_webhook_queue_depth',
    help: 'Webhook deliveries waiting for their first attempt or a retry',
    registers: [registry],
    async collect() {
      await collectBacklog(({ pending }) => this.set(pending));
    },
  });
  new Gauge({
    name: 'catalog_webhook_oldest_pending_seconds',
    help: 'Age of the oldest webhook delivery not yet delivered or given up (0 when none)',
    registers: [registry],
    async collect() {
      await collectBacklog(({ oldestPendingSeconds }) => this.set(oldestPendingSeconds));
    },
  });

  return {
    attempted(type, outcome) {
      attempts.labels(type).inc();
      deliveries.labels(type, outcome).inc();
    },
  };
}
