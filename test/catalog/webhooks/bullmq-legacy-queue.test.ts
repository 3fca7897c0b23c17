import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { LEGACY_QUEUE_PREFIX } from '../../../services/catalog/src/webhooks/bullmq-delivery-queue';
import { queuedDelivery } from '../../../services/catalog/src/webhooks/delivery-worker';
import { openDeliveryQueue } from '../../../services/catalog/src/webhooks/open-delivery-queue';
import { waitFor } from '../../support/ports';
import { RedisServer } from '../../support/redis-server';
import { tempDataDir } from '../../support/services';
import { startReceiver, subscription, toolCreated } from '../../support/webhook-receiver';

/**
 * Earlier versions kept the delivery queue under the prefix `tool-directory`, without the hash
 * tag a Redis Cluster needs. A delivery they queued, still pending when the catalog is upgraded,
 * is made by the new worker: nothing queued is lost.
 */
test('a delivery queued by an earlier version is delivered after the upgrade', async () => {
  const redis = await RedisServer.start(['--maxmemory-policy', 'noeviction']);
  const receiver = await startReceiver();
  const sub = subscription(receiver.url);
  const event = toolCreated(sub.id);
  // As the earlier version queued it: same queue name, the untagged prefix.
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  const legacy = new Queue('webhook-deliveries', { connection, prefix: LEGACY_QUEUE_PREFIX });
  await legacy.add(event.type, queuedDelivery(sub, event), {
    jobId: event.id,
    attempts: 2,
    backoff: { type: 'webhook' },
  });

  const { queue, worker } = openDeliveryQueue(
    {
      DATA_DIR: tempDataDir(),
      REDIS_URL: redis.url,
      WEBHOOK_RETRY_SCHEDULE: '100ms',
      WEBHOOK_TIMEOUT_MS: 3_000,
      WEBHOOK_ALLOW_PRIVATE: true,
    },
    { lookup: async (id) => (id === sub.id ? sub : null), disable: async () => undefined },
  );
  try {
    await worker.start();
    await waitFor(async () => (receiver.requests.length > 0 ? true : undefined), {
      what: 'the legacy delivery',
    });
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([event.id]);
    // The worker records the attempt once the receiver's answer is back, after the receiver saw it.
    const attempts = await waitFor(
      async () => {
        const recorded = await queue.attempts(sub.id, 10);
        return recorded.length > 0 ? recorded : undefined;
      },
      { what: 'the recorded attempt' },
    );
    expect(attempts).toEqual([
      expect.objectContaining({ eventId: event.id, outcome: 'delivered' }),
    ]);
  } finally {
    await worker.close();
    await queue.close();
    await legacy.close();
    connection.disconnect();
    await receiver.close();
    await redis.stop();
  }
});
