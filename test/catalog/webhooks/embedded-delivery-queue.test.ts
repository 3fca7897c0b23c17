import path from 'node:path';
import Database from 'better-sqlite3';
import {
  EmbeddedDeliveryQueue,
  WEBHOOK_QUEUE_FILE,
} from '../../../services/catalog/src/webhooks/embedded-delivery-queue';
import { tempDataDir } from '../../support/services';
import { deliveryQueueSuite } from './delivery-queue-suite';
import { subscription, toolCreated } from '../../support/webhook-receiver';

deliveryQueueSuite('embedded (SQLite under DATA_DIR)', async () => ({ DATA_DIR: tempDataDir() }));

describe('embedded delivery queue: leases', () => {
  test('a leased delivery is not leased again until its lease runs out', async () => {
    const dataDir = tempDataDir();
    const first = new EmbeddedDeliveryQueue(dataDir);
    const second = new EmbeddedDeliveryQueue(dataDir);
    const sub = subscription('http://127.0.0.1:1/hooks');
    const event = toolCreated(sub.id);
    await first.enqueue(sub, event);
    const now = Date.now();
    const claimed = first.claim(now, 10_000);
    expect(claimed?.delivery.event).toEqual(event);
    expect(second.claim(now, 10_000)).toBeNull();
    expect(second.claim(now + 9_999, 10_000)).toBeNull();
    // The first holder died: once its lease is over, another process takes the delivery up.
    const taken = second.claim(now + 10_000, 10_000);
    expect(taken?.delivery.event.id).toBe(event.id);
    // The first holder's late result is ignored: the delivery is the second's now.
    expect(first.finish(claimed!, sub.id, null, now + 10_001)).toBe(false);
    expect(second.finish(taken!, sub.id, null, now + 10_001)).toBe(true);
    expect(await second.backlog()).toEqual({ pending: 0, oldestPendingSeconds: 0 });
    await first.close();
    await second.close();
  });

  test('finished deliveries are remembered a day, attempts at most 100 per subscription', async () => {
    const dataDir = tempDataDir();
    const queue = new EmbeddedDeliveryQueue(dataDir);
    const sub = subscription('http://127.0.0.1:1/hooks');
    const event = toolCreated(sub.id);
    await queue.enqueue(sub, event);
    const now = Date.now();
    for (let attempt = 1; attempt <= 120; attempt++) {
      const claimed = queue.claim(now + attempt, 1_000)!;
      queue.finish(
        claimed,
        sub.id,
        {
          eventId: event.id,
          type: event.type,
          attempt,
          at: new Date(now + attempt).toISOString(),
          statusCode: 500,
          error: null,
          outcome: attempt < 120 ? 'retrying' : 'failed',
          nextAttemptAt: attempt < 120 ? new Date(now + attempt + 1).toISOString() : null,
        },
        now + attempt,
      );
    }
    const attempts = await queue.attempts(sub.id, 1_000);
    expect(attempts).toHaveLength(100);
    expect(attempts[0]).toMatchObject({ attempt: 120, outcome: 'failed' });
    expect(attempts[99]!.attempt).toBe(21);

    queue.prune(now + 23 * 3_600_000);
    await queue.enqueue(sub, event);
    expect((await queue.backlog()).pending).toBe(0);
    queue.prune(now + 25 * 3_600_000);
    await queue.enqueue(sub, event);
    expect((await queue.backlog()).pending).toBe(1);
    await queue.close();

    const db = new Database(path.join(dataDir, WEBHOOK_QUEUE_FILE), { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
  });
});
