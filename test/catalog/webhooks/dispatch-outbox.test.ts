import pino from 'pino';
import { CatalogChanges } from '../../../services/catalog/src/changes/catalog-changes';
import type { CatalogStore } from '../../../services/catalog/src/store/catalog-store';
import {
  type DispatchCursor,
  EmbeddedDispatchCursor,
} from '../../../services/catalog/src/webhooks/dispatch-cursor';
import {
  OutboxDispatcher,
  type OutboxDispatcherOptions,
} from '../../../services/catalog/src/webhooks/outbox-dispatcher';
import type { Subscription } from '../../../services/catalog/src/webhooks/webhook-types';
import { LocalChangeFeed } from '../../../services/shared/change-feed/local-change-feed';
import { newTool } from '../../support/catalog';
import { waitFor } from '../../support/ports';
import { tempDataDir } from '../../support/services';
import { onEveryStore } from '../../support/store-suites';
import { MemorySubscriptions, RecordingQueue } from '../../support/webhook-fixtures';

const silent = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The outbox dispatcher (docs/api.md#webhook-events-and-deliveries): every catalog change reaches
 * every matching subscription once, with the body of docs/webhooks.md#events, from a durable
 * cursor. Real stores, a real local change feed and a real cursor file; the queue records what it
 * is given, idempotent by event id like the real one.
 */
onEveryStore('webhook-dispatch', (storeName, openStore) => {
  describe(`outbox dispatcher on the ${storeName} store`, () => {
    let store: CatalogStore;
    let feed: LocalChangeFeed;
    let changes: CatalogChanges;
    let cursorDir: string;
    let subscriptions: MemorySubscriptions;
    let queue: RecordingQueue;
    const open: { stop(): Promise<unknown> }[] = [];

    beforeEach(async () => {
      store = await openStore();
      feed = new LocalChangeFeed(tempDataDir());
      changes = new CatalogChanges(store, feed);
      cursorDir = tempDataDir();
      subscriptions = new MemorySubscriptions();
      queue = new RecordingQueue();
    });
    afterEach(async () => {
      for (const item of open.splice(0)) await item.stop();
      await feed.close();
      await store.close();
    });

    function cursor(): DispatchCursor {
      const made = new EmbeddedDispatchCursor(cursorDir);
      open.push({ stop: () => made.close() });
      return made;
    }

    async function start(options: Partial<OutboxDispatcherOptions> = {}) {
      const dispatcher = await OutboxDispatcher.start({
        store,
        subscriptions,
        queue,
        feed,
        cursor: cursor(),
        // Long: unless a test shortens it, only the feed's announcement triggers a run.
        pollMs: 60_000,
        logger: silent,
        ...options,
      });
      open.unshift({ stop: () => dispatcher.stop() });
      await dispatcher.catchUp();
      return dispatcher;
    }

    const eventsOf = (subscription: Subscription, count: number) =>
      waitFor(
        async () => {
          const events = queue.for(subscription);
          return events.length >= count ? events : undefined;
        },
        { what: `${count} events for ${subscription.id}` },
      );

    const entryOf = async (version: number) => (await store.changesSince(version - 1, 1))[0]!;
    const entryAt = async (version: number) => (await entryOf(version)).at;
    /** The record as the change stored it: with its updatedAt. */
    const recordOf = async (version: number) => ((await entryOf(version)) as { tool: object }).tool;

    test('from the first start on, each change once, with the bodies of docs/api.md#webhook-events-and-deliveries', async () => {
      const all = subscriptions.add({ events: ['tool.created', 'tool.updated', 'tool.deleted'] });
      const deletions = subscriptions.add({ events: ['tool.deleted'] });
      subscriptions.add({ events: ['quota.warning'] });
      await start();
      // The bundled dataset's history is not replayed.
      expect(queue.calls).toBe(0);

      const tool = newTool();
      const created = await changes.upsert([tool]);
      const changed = {
        ...tool,
        description:
          'Notes that write themselves, sort themselves and find the one you lost last week.',
      };
      const updated = await changes.upsert([changed]);
      const deleted = (await changes.delete(tool.slug))!;

      const events = await eventsOf(all, 3);
      expect(events).toEqual([
        {
          id: `evt_${created.version}_${all.id}`,
          type: 'tool.created',
          timestamp: await entryAt(created.version),
          data: { ...tool, updatedAt: expect.any(String) },
        },
        {
          id: `evt_${updated.version}_${all.id}`,
          type: 'tool.updated',
          timestamp: await entryAt(updated.version),
          data: { ...(await recordOf(updated.version)), changedFields: ['description'] },
        },
        {
          id: `evt_${deleted.version}_${all.id}`,
          type: 'tool.deleted',
          timestamp: await entryAt(deleted.version),
          data: { slug: tool.slug, name: tool.name },
        },
      ]);
      expect(new Date(events[0]!.timestamp).toISOString()).toBe(events[0]!.timestamp);
      expect(events[0]!.data).toEqual(await recordOf(created.version));
      expect(events[1]!.data).toMatchObject(changed);
      expect(queue.for(deletions).map((e) => e.id)).toEqual([
        `evt_${deleted.version}_${deletions.id}`,
      ]);
      expect(queue.events.size).toBe(4);
    });

    test('a restart resumes from the cursor: nothing missed, nothing sent again', async () => {
      const subscriber = subscriptions.add({ events: ['tool.created'] });
      const first = await start();
      await changes.upsert([newTool({ slug: 'before-restart', name: 'Before Restart' })]);
      await eventsOf(subscriber, 1);
      await first.stop();

      // Written while no dispatcher runs, and not announced to anyone.
      const missed = await store.upsert([newTool({ slug: 'while-down', name: 'While Down' })]);
      queue = new RecordingQueue();
      await start();
      expect(queue.for(subscriber).map((e) => e.id)).toEqual([
        `evt_${missed.version}_${subscriber.id}`,
      ]);
      expect(queue.calls).toBe(1);
    });

    test('a subscription does not hear of changes made before it was created', async () => {
      const older = subscriptions.add({ events: ['tool.created'] });
      const dispatcher = await start();
      await dispatcher.stop();
      const before = await store.upsert([newTool({ slug: 'old-news', name: 'Old News' })]);
      await sleep(5);
      const newer = subscriptions.add({ events: ['tool.created'] });
      const after = await store.upsert([newTool({ slug: 'fresh-news', name: 'Fresh News' })]);

      await start();
      expect(queue.for(older).map((e) => e.id)).toEqual([
        `evt_${before.version}_${older.id}`,
        `evt_${after.version}_${older.id}`,
      ]);
      expect(queue.for(newer).map((e) => e.id)).toEqual([`evt_${after.version}_${newer.id}`]);
    });

    test('a backlog larger than a batch is dispatched whole, in order', async () => {
      const subscriber = subscriptions.add({ events: ['tool.created', 'tool.deleted'] });
      const dispatcher = await start();
      await dispatcher.stop();
      const versions: number[] = [];
      for (let i = 0; i < 4; i++) {
        const slug = `batch-tool-${i}`;
        versions.push((await store.upsert([newTool({ slug, name: `Batch Tool ${i}` })])).version);
      }
      versions.push((await store.delete('batch-tool-0'))!.version);

      const resumed = cursor();
      await start({ batchSize: 2, cursor: resumed });
      expect(queue.for(subscriber).map((e) => e.id)).toEqual(
        versions.map((v) => `evt_${v}_${subscriber.id}`),
      );
      expect(await resumed.get()).toBe(versions[4]);
    });

    test('an unannounced change is found by the poll', async () => {
      const subscriber = subscriptions.add({ events: ['tool.created'] });
      await start({ pollMs: 100 });
      const written = await store.upsert([newTool()]);
      const [event] = await eventsOf(subscriber, 1);
      expect(event!.id).toBe(`evt_${written.version}_${subscriber.id}`);
    });

    test('a failing queue loses nothing: the change is enqueued on a later run, warned once', async () => {
      const subscriber = subscriptions.add({ events: ['tool.created'] });
      const warnings: unknown[] = [];
      const logger = { warn: (...args: unknown[]) => warnings.push(args), info: () => undefined };
      await start({ pollMs: 100, logger });
      queue.failures = 3;
      const written = await changes.upsert([newTool()]);

      const [event] = await eventsOf(subscriber, 1);
      expect(event!.id).toBe(`evt_${written.version}_${subscriber.id}`);
      expect(queue.calls).toBe(4);
      expect(warnings).toHaveLength(1);
    });
  });
});
