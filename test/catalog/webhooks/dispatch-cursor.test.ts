import type { Redis } from 'ioredis';
import pino from 'pino';
import { CatalogChanges } from '../../../services/catalog/src/changes/catalog-changes';
import {
  type DispatchCursor,
  EmbeddedDispatchCursor,
  REDIS_CURSOR_KEY,
  RedisDispatchCursor,
} from '../../../services/catalog/src/webhooks/dispatch-cursor';
import { OutboxDispatcher } from '../../../services/catalog/src/webhooks/outbox-dispatcher';
import { RedisChangeFeed } from '../../../services/shared/change-feed/redis-change-feed';
import { createRedis } from '../../../services/shared/redis';
import { embeddedStore, newTool } from '../../support/catalog';
import { waitFor } from '../../support/ports';
import { RedisServer } from '../../support/redis-server';
import { tempDataDir } from '../../support/services';
import { MemorySubscriptions, RecordingQueue } from '../../support/webhook-fixtures';

let server: RedisServer;
const clients: Redis[] = [];

async function connect(): Promise<Redis> {
  const client = createRedis(server.url, 'dispatch-cursor-test');
  clients.push(client);
  await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

beforeAll(async () => {
  server = await RedisServer.start();
});
afterAll(async () => {
  for (const client of clients) client.disconnect();
  await server.stop();
});

/** Two handles on one cursor, as two processes or replicas would hold, and a reopened one. */
interface CursorKind {
  open(): Promise<{ a: DispatchCursor; b: DispatchCursor; reopen: () => Promise<DispatchCursor> }>;
}

const kinds: [string, CursorKind][] = [
  [
    'embedded (DATA_DIR/webhooks-cursor.db)',
    {
      async open() {
        const dir = tempDataDir();
        return {
          a: new EmbeddedDispatchCursor(dir),
          b: new EmbeddedDispatchCursor(dir),
          reopen: async () => new EmbeddedDispatchCursor(dir),
        };
      },
    },
  ],
  [
    'on Redis',
    {
      async open() {
        const key = `${REDIS_CURSOR_KEY}:${clients.length}`;
        return {
          a: new RedisDispatchCursor(await connect(), key),
          b: new RedisDispatchCursor(await connect(), key),
          reopen: async () => new RedisDispatchCursor(await connect(), key),
        };
      },
    },
  ],
];

describe.each(kinds)('the dispatch cursor, %s', (_name, kind) => {
  test('is unset at first, then only moves forward, and is durable', async () => {
    const { a, b, reopen } = await kind.open();
    expect(await a.get()).toBeNull();
    await a.advance(5);
    expect(await b.get()).toBe(5);
    await b.advance(3);
    expect(await a.get()).toBe(5);

    // Two replicas advancing at once, in any order: the highest wins.
    const targets = Array.from({ length: 40 }, (_, i) => 6 + ((i * 17) % 40));
    await Promise.all(targets.map((to, i) => (i % 2 ? a : b).advance(to)));
    expect(await a.get()).toBe(45);

    await a.close();
    await b.close();
    const again = await reopen();
    expect(await again.get()).toBe(45);
    await again.close();
  });
});

describe('two catalog replicas sharing Redis', () => {
  // Each replica: its own view of the store, feed connection, cursor handle and dispatcher.
  const dataDir = tempDataDir();
  const stores = [embeddedStore(dataDir), embeddedStore(dataDir)];
  const subscriptions = new MemorySubscriptions();
  const queue = new RecordingQueue();
  let feeds: RedisChangeFeed[];
  let dispatchers: OutboxDispatcher[];

  beforeAll(async () => {
    feeds = [
      new RedisChangeFeed(await connect(), await connect()),
      new RedisChangeFeed(await connect(), await connect()),
    ];
    dispatchers = await Promise.all(
      stores.map(async (store, i) =>
        OutboxDispatcher.start({
          store,
          subscriptions,
          queue,
          feed: feeds[i]!,
          cursor: new RedisDispatchCursor(await connect()),
          pollMs: 50,
          logger: pino({ level: 'silent' }),
        }),
      ),
    );
    await Promise.all(dispatchers.map((d) => d.catchUp()));
  });
  afterAll(async () => {
    await Promise.all(dispatchers.map((d) => d.stop()));
    await Promise.all([...feeds, ...stores].map((x) => x.close()));
  });

  test('enqueue each change once per subscription, and share the cursor', async () => {
    const subscriber = subscriptions.add({ events: ['tool.created', 'tool.updated'] });
    const changes = new CatalogChanges(stores[0]!, feeds[0]!);
    const versions: number[] = [];
    for (let i = 0; i < 20; i++) {
      const n = i % 10;
      const description = `Revision ${i} of a tool that two catalog replicas both see change.`;
      const tool = newTool({ slug: `replica-tool-${n}`, name: `Replica Tool ${n}`, description });
      versions.push((await changes.upsert([tool])).version);
    }

    const expected = versions.map((v) => `evt_${v}_${subscriber.id}`);
    await waitFor(async () => (queue.events.size >= expected.length ? true : undefined), {
      what: 'every change enqueued',
    });
    await Promise.all(dispatchers.map((d) => d.catchUp()));
    expect([...queue.events.keys()].sort()).toEqual(expected.sort());
    expect(Number(await (await connect()).get(REDIS_CURSOR_KEY))).toBe(versions[19]);
  });
});
