import { spawn } from 'node:child_process';
import path from 'node:path';
import { Registry } from 'prom-client';
import { Webhook } from 'standardwebhooks';
import {
  type DeliveryQueueSettings,
  openDeliveryQueue,
} from '../../../services/catalog/src/webhooks/open-delivery-queue';
import type { DeliveryWorker } from '../../../services/catalog/src/webhooks/delivery-worker';
import type {
  DeliveryQueue,
  Subscription,
  WebhookEvent,
} from '../../../services/catalog/src/webhooks/webhook-types';
import { POSTPONE_MS } from '../../../services/catalog/src/webhooks/delivery-worker';
import { killOnExit } from '../../support/child-processes';
import { waitFor } from '../../support/ports';
import { deliveryLeaseMs, within } from '../../support/waits';
import {
  type Answer,
  type Receiver,
  startReceiver,
  subscription,
  toolCreated,
} from '../../support/webhook-receiver';

/**
 * Where a queue keeps its deliveries: a fresh DATA_DIR, and a flushed Redis (or cluster) for
 * BullMQ.
 */
export type QueueStorage = Pick<
  DeliveryQueueSettings,
  'DATA_DIR' | 'REDIS_URL' | 'REDIS_CLUSTER_NODES'
>;

/** The attempt time limit of the queues here (WEBHOOK_TIMEOUT_MS). */
const TIMEOUT_MS = 3_000;
/**
 * The longest a delivery here waits for its next attempt: one postponed after a failed lookup
 * (POSTPONE_MS); the schedules here are 100 ms, and a receiver's Retry-After 2 s.
 */
const NEXT_ATTEMPT_MS = within(POSTPONE_MS);

/** Time enough for a few polls and retries, to see that something does NOT happen. */
const QUIET_MS = 1_500;
const quiet = () => new Promise((r) => setTimeout(r, QUIET_MS));

/**
 * The behaviour every delivery queue shares (docs/api.md#webhook-events-and-deliveries), run
 * against real storage: SQLite under a DATA_DIR, or a real Redis (one server or a cluster) for
 * BullMQ.
 */
export function deliveryQueueSuite(name: string, freshStorage: () => Promise<QueueStorage>) {
  describe(`${name}: webhook deliveries`, () => {
    let storage: QueueStorage;
    const subscriptions = new Map<string, Subscription>();
    const disabled: string[] = [];
    /** The next lookups that fail, as when the subscription store is unreachable. */
    let failingLookups = 0;
    const opened: Array<{ queue: DeliveryQueue; worker: DeliveryWorker }> = [];
    const receivers: Receiver[] = [];

    beforeEach(async () => {
      storage = await freshStorage();
      subscriptions.clear();
      disabled.length = 0;
      failingLookups = 0;
    });

    afterEach(async () => {
      for (const { queue, worker } of opened.splice(0)) {
        await worker.close();
        await queue.close();
      }
      await Promise.all(receivers.splice(0).map((r) => r.close()));
    });

    /** A queue and its worker, as one catalog process has them. */
    function open(schedule = '100ms,100ms,100ms', registry?: Registry) {
      const pair = openDeliveryQueue(
        {
          ...storage,
          WEBHOOK_RETRY_SCHEDULE: schedule,
          WEBHOOK_TIMEOUT_MS: TIMEOUT_MS,
          WEBHOOK_ALLOW_PRIVATE: true,
        },
        {
          lookup: async (id) => {
            if (failingLookups > 0) {
              failingLookups -= 1;
              throw new Error('subscription store unavailable');
            }
            return subscriptions.get(id) ?? null;
          },
          disable: async (id) => {
            disabled.push(id);
            const sub = subscriptions.get(id);
            if (sub) sub.disabledAt = new Date().toISOString();
          },
          ...(registry && { registry }),
        },
      );
      opened.push(pair);
      return pair;
    }

    async function receiverFor(answer?: (n: number) => Answer) {
      const receiver = await startReceiver(answer);
      receivers.push(receiver);
      const sub = subscription(receiver.url);
      subscriptions.set(sub.id, sub);
      return { receiver, sub };
    }

    const received = (receiver: Receiver, count: number, timeoutMs = NEXT_ATTEMPT_MS) =>
      waitFor(async () => (receiver.requests.length >= count ? true : undefined), {
        timeoutMs,
        what: `${count} request(s) at the receiver`,
      });

    const drained = (queue: DeliveryQueue) =>
      waitFor(async () => ((await queue.backlog()).pending === 0 ? true : undefined), {
        timeoutMs: NEXT_ATTEMPT_MS,
        what: 'an empty queue',
      });

    const recorded = (queue: DeliveryQueue, subscriptionId: string, count: number) =>
      waitFor(
        async () => {
          const attempts = await queue.attempts(subscriptionId, 50);
          return attempts.length >= count ? attempts : undefined;
        },
        { timeoutMs: NEXT_ATTEMPT_MS, what: `${count} recorded attempt(s)` },
      );

    test('an event enqueued twice is delivered once, also when enqueued again after delivery', async () => {
      const { receiver, sub } = await receiverFor();
      const { queue, worker } = open();
      const event = toolCreated(sub.id);
      await queue.enqueue(sub, event);
      await queue.enqueue(sub, event);
      await worker.start();
      await received(receiver, 1);
      await drained(queue);
      await queue.enqueue(sub, event);
      await quiet();
      expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([event.id]);
    });

    test('500, 500, then 200: the third attempt delivers the same webhook-id; attempts newest first', async () => {
      const { receiver, sub } = await receiverFor((n) => ({ status: n < 3 ? 500 : 200 }));
      const { queue, worker } = open();
      const event = toolCreated(sub.id);
      await worker.start();
      await queue.enqueue(sub, event);
      await received(receiver, 3);

      const ids = receiver.requests.map((r) => r.headers['webhook-id']);
      expect(ids).toEqual([event.id, event.id, event.id]);
      for (const request of receiver.requests) {
        expect(() =>
          new Webhook(sub.secret).verify(request.body, request.headers as Record<string, string>),
        ).not.toThrow();
      }
      const attempts = await recorded(queue, sub.id, 3);
      expect(attempts).toEqual([
        expect.objectContaining({ attempt: 3, outcome: 'delivered', statusCode: 200, error: null }),
        expect.objectContaining({ attempt: 2, outcome: 'retrying', statusCode: 500 }),
        expect.objectContaining({ attempt: 1, outcome: 'retrying', statusCode: 500 }),
      ]);
      for (const attempt of attempts) {
        expect(attempt).toMatchObject({ eventId: event.id, type: 'tool.created' });
      }
      expect(attempts[0]!.nextAttemptAt).toBeNull();
      for (const retried of attempts.slice(1)) {
        expect(Date.parse(retried.nextAttemptAt!)).toBeGreaterThan(Date.parse(retried.at));
      }
      expect(await queue.attempts(sub.id, 2)).toEqual(attempts.slice(0, 2));
      await drained(queue);
      await quiet();
      expect(receiver.requests).toHaveLength(3);
    });

    test('after the last retry the delivery has failed: nothing more is attempted', async () => {
      const { receiver, sub } = await receiverFor(() => ({ status: 500 }));
      const { queue, worker } = open('50ms,50ms');
      await worker.start();
      await queue.enqueue(sub, toolCreated(sub.id));
      const attempts = await recorded(queue, sub.id, 3);
      expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([
        [3, 'failed'],
        [2, 'retrying'],
        [1, 'retrying'],
      ]);
      expect(attempts[0]!.nextAttemptAt).toBeNull();
      await drained(queue);
      await quiet();
      expect(receiver.requests).toHaveLength(3);
    });

    test('an attempt without an answer is recorded with its error', async () => {
      const { receiver, sub } = await receiverFor();
      await receiver.close();
      const { queue, worker } = open('50ms');
      await worker.start();
      await queue.enqueue(sub, toolCreated(sub.id));
      const attempts = await recorded(queue, sub.id, 2);
      expect(attempts[0]).toMatchObject({ outcome: 'failed', statusCode: null });
      expect(attempts[0]!.error).toMatch(/ECONNREFUSED/);
    });

    test('410 disables the subscription; nothing more is delivered to it', async () => {
      const { receiver, sub } = await receiverFor(() => ({ status: 410 }));
      const { queue, worker } = open();
      await worker.start();
      await queue.enqueue(sub, toolCreated(sub.id));
      const attempts = await recorded(queue, sub.id, 1);
      expect(attempts).toEqual([
        expect.objectContaining({ attempt: 1, outcome: 'disabled', statusCode: 410 }),
      ]);
      expect(disabled).toEqual([sub.id]);
      await queue.enqueue(sub, toolCreated(sub.id));
      await drained(queue);
      await quiet();
      expect(receiver.requests).toHaveLength(1);
    });

    test('Retry-After on a 503 is honoured', async () => {
      const { receiver, sub } = await receiverFor((n) =>
        n === 1 ? { status: 503, headers: { 'retry-after': '2' } } : { status: 200 },
      );
      const { queue, worker } = open('100ms');
      await worker.start();
      await queue.enqueue(sub, toolCreated(sub.id));
      await received(receiver, 2);
      const [first, second] = receiver.requests;
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(1_900);
      const attempts = await recorded(queue, sub.id, 2);
      const retried = attempts[1]!;
      expect(retried).toMatchObject({ outcome: 'retrying', statusCode: 503 });
      expect(Date.parse(retried.nextAttemptAt!) - Date.parse(retried.at)).toBeGreaterThanOrEqual(
        2_000,
      );
    });

    test("a deleted subscription's pending deliveries are dropped", async () => {
      const { receiver, sub } = await receiverFor(() => {
        subscriptions.delete(sub.id);
        return { status: 500 };
      });
      const { queue, worker } = open('200ms');
      await worker.start();
      await queue.enqueue(sub, toolCreated(sub.id));
      await received(receiver, 1);
      await drained(queue);
      await quiet();
      expect(receiver.requests).toHaveLength(1);
      expect((await queue.attempts(sub.id, 10)).map((a) => a.outcome)).toEqual(['retrying']);
    });

    test('when the subscription cannot be read, the attempt waits and is not counted', async () => {
      const { receiver, sub } = await receiverFor();
      failingLookups = 1;
      const { queue, worker } = open('50ms');
      await worker.start();
      await queue.enqueue(sub, toolCreated(sub.id));
      const attempts = await recorded(queue, sub.id, 1);
      expect(failingLookups).toBe(0);
      expect(attempts).toEqual([
        expect.objectContaining({ attempt: 1, outcome: 'delivered', statusCode: 200 }),
      ]);
      expect(receiver.requests).toHaveLength(1);
    });

    test('two processes on one store: each webhook-id is POSTed exactly once', async () => {
      const { receiver, sub } = await receiverFor();
      const first = open();
      const second = open();
      const events: WebhookEvent[] = Array.from({ length: 20 }, () => toolCreated(sub.id));
      await Promise.all([first.worker.start(), second.worker.start()]);
      // Both replicas follow the same changes and enqueue every event.
      await Promise.all(
        events.flatMap((event) => [
          first.queue.enqueue(sub, event),
          second.queue.enqueue(sub, event),
        ]),
      );
      await received(receiver, events.length);
      await drained(first.queue);
      await quiet();
      const ids = receiver.requests.map((r) => r.headers['webhook-id']);
      expect(ids.sort()).toEqual(events.map((e) => e.id).sort());
    });

    test('metrics: queue depth and oldest pending from the backlog, attempts by outcome', async () => {
      const { receiver, sub } = await receiverFor((n) => ({ status: n === 1 ? 500 : 200 }));
      const registry = new Registry();
      const { queue, worker } = open('100ms', registry);
      await queue.enqueue(sub, toolCreated(sub.id));
      await queue.enqueue(sub, toolCreated(sub.id));
      await new Promise((r) => setTimeout(r, 50));
      const value = async (name: string, labels: Record<string, string> = {}) => {
        const metric = await registry.getSingleMetric(name)!.get();
        return metric.values.find((v) =>
          Object.entries(labels).every(([k, l]) => v.labels[k] === l),
        )?.value;
      };
      expect(await value('catalog_webhook_queue_depth')).toBe(2);
      expect(await value('catalog_webhook_oldest_pending_seconds')).toBeGreaterThan(0);

      await worker.start();
      await received(receiver, 3);
      await recorded(queue, sub.id, 3);
      expect(await value('catalog_webhook_attempts_total', { event: 'tool.created' })).toBe(3);
      const outcome = (o: string) =>
        value('catalog_webhook_deliveries_total', { event: 'tool.created', outcome: o });
      expect(await outcome('retrying')).toBe(1);
      expect(await outcome('delivered')).toBe(2);
      await waitFor(
        async () =>
          (await value('catalog_webhook_queue_depth')) === 0 &&
          (await value('catalog_webhook_oldest_pending_seconds')) === 0
            ? true
            : undefined,
        { what: 'the gauges back at 0' },
      );
    });

    test('a worker killed with SIGKILL while a retry is pending: a new worker delivers it', async () => {
      const { receiver, sub } = await receiverFor((n) => ({ status: n === 1 ? 500 : 200 }));
      const schedule = '5s';
      const settings: DeliveryQueueSettings = {
        ...storage,
        WEBHOOK_RETRY_SCHEDULE: schedule,
        WEBHOOK_TIMEOUT_MS: TIMEOUT_MS,
        WEBHOOK_ALLOW_PRIVATE: true,
      };
      const entry = path.resolve(
        __dirname,
        '../../../dist/services/catalog/src/webhooks/open-delivery-queue.js',
      );
      const child = killOnExit(
        spawn(
          process.execPath,
          [
            '-e',
            `const { openDeliveryQueue } = require(${JSON.stringify(entry)});
             const sub = JSON.parse(process.argv[1]);
             const { worker } = openDeliveryQueue(JSON.parse(process.argv[2]), {
               lookup: async (id) => (id === sub.id ? sub : null),
               disable: async () => undefined,
             });
             worker.start();`,
            JSON.stringify(sub),
            JSON.stringify(settings),
          ],
          { stdio: ['ignore', 'inherit', 'inherit'] },
        ),
      );
      const { queue, worker } = open(schedule);
      const event = toolCreated(sub.id);
      await queue.enqueue(sub, event);
      const [retrying] = await recorded(queue, sub.id, 1);
      expect(retrying).toMatchObject({ attempt: 1, outcome: 'retrying', statusCode: 500 });
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      expect(receiver.requests).toHaveLength(1);

      await worker.start();
      // Killed between recording the attempt and rescheduling it, a delivery stays leased until
      // its lease runs out (or BullMQ's stalled-job check hands it on): wait past that.
      await received(receiver, 2, within(deliveryLeaseMs(TIMEOUT_MS)));
      expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([event.id, event.id]);
      const attempts = await recorded(queue, sub.id, 2);
      expect(attempts[0]).toMatchObject({ outcome: 'delivered', statusCode: 200 });
      // Killed after its attempt was recorded but before the queue rescheduled it, a BullMQ job
      // is a stalled one: handed on at once and counted as its first attempt again (delivery is
      // at least once, under the same webhook-id). Otherwise it waits for its retry time.
      if (attempts[0]!.attempt === 2) {
        expect(receiver.requests[1]!.at).toBeGreaterThanOrEqual(
          Date.parse(retrying!.nextAttemptAt!),
        );
      }
    }, 120_000);
  });
}
