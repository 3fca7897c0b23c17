import type { Registry } from 'prom-client';
import { redisConnector } from '../../../shared/redis';
import type { RedisSettings } from '../../../shared/redis-config';
import { BullmqDeliveryQueue, BullmqDeliveryWorker } from './bullmq-delivery-queue';
import type { DeliveryWorker, DeliveryWorkerOptions } from './delivery-worker';
import { EmbeddedDeliveryQueue, EmbeddedDeliveryWorker } from './embedded-delivery-queue';
import { parseRetrySchedule } from './retry-schedule';
import { webhookMetrics } from './webhook-metrics';
import type { DeliveryQueue } from './webhook-types';

/** With Redis the queue is BullMQ's, shared by all replicas; without, SQLite under DATA_DIR. */
export interface DeliveryQueueSettings extends RedisSettings {
  DATA_DIR: string;
  WEBHOOK_RETRY_SCHEDULE: string;
  WEBHOOK_TIMEOUT_MS: number;
  WEBHOOK_ALLOW_PRIVATE: boolean;
}

export type DeliveryWorkerHooks = Pick<
  DeliveryWorkerOptions,
  'lookup' | 'disable' | 'logger' | 'resolve'
> & {
  /** Where the delivery metrics go (none without). */
  registry?: Registry;
};

/**
 * The delivery queue the settings call for, and a worker for it (not started). Every process
 * that enqueues may also run a worker: the queue sees to it that each delivery is attempted by
 * one of them at a time.
 */
export function openDeliveryQueue(
  settings: DeliveryQueueSettings,
  { registry, ...hooks }: DeliveryWorkerHooks,
): { queue: DeliveryQueue; worker: DeliveryWorker } {
  const schedule = parseRetrySchedule(settings.WEBHOOK_RETRY_SCHEDULE);
  const redis = redisConnector(settings);
  const queue = redis
    ? new BullmqDeliveryQueue(redis, schedule)
    : new EmbeddedDeliveryQueue(settings.DATA_DIR);
  const options: DeliveryWorkerOptions = {
    ...hooks,
    schedule,
    timeoutMs: settings.WEBHOOK_TIMEOUT_MS,
    allowPrivate: settings.WEBHOOK_ALLOW_PRIVATE,
    ...(registry && { metrics: webhookMetrics(registry, queue) }),
  };
  const worker =
    queue instanceof BullmqDeliveryQueue
      ? new BullmqDeliveryWorker(queue, options)
      : new EmbeddedDeliveryWorker(queue, options);
  return { queue, worker };
}
