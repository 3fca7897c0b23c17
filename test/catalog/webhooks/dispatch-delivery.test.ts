import pino from 'pino';
import { CatalogChanges } from '../../../services/catalog/src/changes/catalog-changes';
import { EmbeddedDispatchCursor } from '../../../services/catalog/src/webhooks/dispatch-cursor';
import { OutboxDispatcher } from '../../../services/catalog/src/webhooks/outbox-dispatcher';
import { LocalChangeFeed } from '../../../services/shared/change-feed/local-change-feed';
import { embeddedStore, newTool } from '../../support/catalog';
import { waitFor } from '../../support/ports';
import { tempDataDir } from '../../support/services';
import { MemorySubscriptions, deliveringToReceiver } from '../../support/webhook-fixtures';

/**
 * From an operator change to a signed request at the receiver
 * (docs/api.md#catalog-changes-and-freshness, docs/api.md#webhook-events-and-deliveries), on the
 * real embedded store, change feed, cursor and delivery queue, with two catalog replicas sharing
 * DATA_DIR, both dispatching: each change arrives once, verifiable with `standardwebhooks`.
 */
test('operator changes reach the receiver once each, signed, from two dispatching replicas', async () => {
  const dataDir = tempDataDir();
  const subscriptions = new MemorySubscriptions();
  const delivery = await deliveringToReceiver(subscriptions);
  const replicas = await Promise.all(
    [0, 1].map(async () => {
      const store = embeddedStore(dataDir);
      const feed = new LocalChangeFeed(dataDir);
      const cursor = new EmbeddedDispatchCursor(dataDir);
      const dispatcher = await OutboxDispatcher.start({
        store,
        feed,
        cursor,
        subscriptions,
        queue: delivery.queue,
        logger: pino({ level: 'silent' }),
      });
      await dispatcher.catchUp();
      return { store, feed, cursor, dispatcher };
    }),
  );
  const subscription = subscriptions.add({
    url: delivery.receiver.url,
    events: ['tool.created', 'tool.updated', 'tool.deleted'],
  });

  try {
    const { store, feed } = replicas[0]!;
    const changes = new CatalogChanges(store, feed);
    const tool = newTool();
    const created = await changes.upsert([tool]);
    const changed = { ...tool, tags: tool.tags.slice(1) };
    const updated = await changes.upsert([changed]);
    const deleted = (await changes.delete(tool.slug))!;

    await waitFor(async () => (delivery.receiver.requests.length >= 3 ? true : undefined), {
      what: 'three deliveries',
    });
    await Promise.all(replicas.map(({ dispatcher }) => dispatcher.catchUp()));
    await waitFor(async () => ((await delivery.queue.backlog()).pending === 0 ? true : undefined), {
      what: 'an empty queue',
    });

    const entry = async (version: number) => (await store.changesSince(version - 1, 1))[0]!;
    const at = async (version: number) => (await entry(version)).at;
    /** The record as the change stored it: with its updatedAt. */
    const record = async (version: number) => ((await entry(version)) as { tool: object }).tool;
    // The worker attempts a few deliveries at once: they may arrive in any order.
    const ids = delivery.receiver.requests.map((r) => r.headers['webhook-id']);
    const received = Object.fromEntries(
      delivery.verifiedBodies(subscription).map((body, i) => [ids[i], body]),
    );
    expect(received).toEqual({
      [`evt_${created.version}_${subscription.id}`]: {
        type: 'tool.created',
        timestamp: await at(created.version),
        data: { ...tool, updatedAt: expect.any(String) },
      },
      [`evt_${updated.version}_${subscription.id}`]: {
        type: 'tool.updated',
        timestamp: await at(updated.version),
        data: { ...(await record(updated.version)), changedFields: ['tags'] },
      },
      [`evt_${deleted.version}_${subscription.id}`]: {
        type: 'tool.deleted',
        timestamp: await at(deleted.version),
        data: { slug: tool.slug, name: tool.name },
      },
    });
    expect(ids).toHaveLength(3);
    expect(received[`evt_${created.version}_${subscription.id}`]).toMatchObject({
      data: await record(created.version),
    });
  } finally {
    for (const { dispatcher, feed, cursor, store } of replicas) {
      await dispatcher.stop();
      await Promise.all([feed.close(), cursor.close(), store.close()]);
    }
    await delivery.close();
  }
});
