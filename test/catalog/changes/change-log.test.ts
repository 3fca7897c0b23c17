import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import type { FastifyInstance } from 'fastify';
import { buildCatalogApp } from '../../../services/catalog/src/app';
import { encodeCursor } from '../../../services/catalog/src/changes/change-cursor';
import type { CatalogStore } from '../../../services/catalog/src/store/catalog-store';
import {
  CATALOG_DATABASE_FILE,
  CATALOG_MIGRATIONS,
  EmbeddedStore,
} from '../../../services/catalog/src/store/embedded-store';
import { TEST_INTERNAL_TOKEN, asTier, dataset, newTool } from '../../support/catalog';
import { tempDataDir } from '../../support/services';
import { onEveryStore } from '../../support/store-suites';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Tier = 'free' | 'pro' | 'enterprise';

const DAY_MS = 24 * 60 * 60 * 1000;

function catalogApp(store: CatalogStore, changesRetentionDays?: number) {
  return buildCatalogApp({
    store,
    meta: dataset.meta,
    internalToken: TEST_INTERNAL_TOKEN,
    logger: false,
    ...(changesRetentionDays !== undefined && { changesRetentionDays }),
  });
}

async function get(app: FastifyInstance, url: string, tier: Tier = 'pro') {
  const res = await app.inject({ url, headers: asTier(tier) });
  return { status: res.statusCode, body: res.json() as Json, type: res.headers['content-type'] };
}

/** Every change after `since`, page by page; the cursor to go on from. */
async function follow(app: FastifyInstance, since?: string, limit = 100, tier: Tier = 'pro') {
  const changes: Json[] = [];
  let cursor = since;
  for (;;) {
    const query = `limit=${limit}${cursor === undefined ? '' : `&since=${cursor}`}`;
    const { status, body } = await get(app, `/v1/changes?${query}`, tier);
    expect(status).toBe(200);
    changes.push(...body.data);
    cursor = body.meta.nextCursor as string;
    if (!body.meta.hasMore) return { changes, cursor };
  }
}

onEveryStore('change-log', (storeName, openStore) => {
  describe(`change log and history on the ${storeName} store`, () => {
    let store: CatalogStore;
    let app: FastifyInstance;
    beforeAll(async () => {
      store = await openStore();
      app = await catalogApp(store);
    });
    afterAll(async () => {
      await app.close();
      await store.close();
    });

    test('from the start: every bundled tool created once, in commit order, page by page', async () => {
      const { changes } = await follow(app, undefined, 7);
      expect(changes.map((c) => c.slug).sort()).toEqual(dataset.tools.map((t) => t.slug).sort());
      expect(changes.every((c) => c.type === 'tool.created')).toBe(true);
      expect(new Set(changes.map((c) => c.cursor)).size).toBe(changes.length);
      const times = changes.map((c) => c.at as string);
      expect(times).toEqual([...times].sort());
    });

    test('a write, an update and a deletion: each exactly once, in order, after the cursor', async () => {
      const { cursor } = await follow(app);
      const [first, second] = dataset.tools;
      await store.upsert([newTool()]);
      await store.upsert([{ ...first!, description: 'Rewritten description.' }]);
      await store.delete(second!.slug);
      const { changes, cursor: last } = await follow(app, cursor);
      expect(changes.map((c) => [c.type, c.slug])).toEqual([
        ['tool.created', 'zephyr-notes'],
        ['tool.updated', first!.slug],
        ['tool.deleted', second!.slug],
      ]);
      expect(changes[0]!.tool).toMatchObject({ slug: 'zephyr-notes', name: 'Zephyr Notes' });
      expect(changes[1]).toMatchObject({ changedFields: ['description'] });
      expect(changes[1]!.tool.description).toBe('Rewritten description.');
      expect(changes[2]).not.toHaveProperty('tool');
      expect(changes[2]).not.toHaveProperty('changedFields');
      // Nothing new: the same cursor, an empty page.
      const again = await get(app, `/v1/changes?since=${last}`);
      expect(again.body.data).toEqual([]);
      expect(again.body.meta).toMatchObject({ nextCursor: last, hasMore: false });
    });

    test("a Free key's changes carry the Free fields of the record", async () => {
      const { changes } = await follow(app, undefined, 100, 'free');
      const created = changes.find((c) => c.type === 'tool.created')!;
      expect(created.tool).toHaveProperty('description');
      expect(created.tool).not.toHaveProperty('longDescription');
      const paid = await follow(app, undefined, 100, 'enterprise');
      expect(paid.changes.find((c) => c.type === 'tool.created')!.tool).toHaveProperty(
        'longDescription',
      );
    });

    test.each([
      ['not a cursor', 'since=hello'],
      ['a made-up version', `since=${Buffer.from('c1:01').toString('base64url')}`],
      ['an empty cursor', 'since='],
      ['limit 0', 'limit=0'],
      ['limit 101', 'limit=101'],
    ])('%s: 400 with a JSON error', async (_name, query) => {
      const { status, body, type } = await get(app, `/v1/changes?${query}`);
      expect(status).toBe(400);
      expect(type).toMatch(/^application\/json/);
      expect(typeof body.error).toBe('string');
    });

    test('a cursor from a version this catalog never reached: 410', async () => {
      const { status, body } = await get(app, `/v1/changes?since=${encodeCursor(10_000_000)}`);
      expect(status).toBe(410);
      expect(body.error).toMatch(/updatedSince/);
    });

    test('history: created, updated field by field, deleted; newest first', async () => {
      const slug = 'history-probe';
      await store.upsert([newTool({ slug, name: 'History Probe', rating: 3 })]);
      await store.upsert([newTool({ slug, name: 'History Probe', rating: 4.5 })]);
      await store.upsert([
        newTool({ slug, name: 'History Probe', rating: 4.5, longDescription: 'Longer.' }),
      ]);
      await store.delete(slug);
      const { status, body } = await get(app, `/v1/tools/${slug}/history`);
      expect(status).toBe(200);
      expect(body.data.map((e: Json) => e.type)).toEqual([
        'tool.deleted',
        'tool.updated',
        'tool.updated',
        'tool.created',
      ]);
      const [deleted, paidOnly, rating, created] = body.data as Json[];
      expect(deleted!.changes).toEqual({});
      expect(rating!.changes).toEqual({ rating: { from: 3, to: 4.5 } });
      expect(paidOnly!.changes).toEqual({
        longDescription: { from: newTool().longDescription, to: 'Longer.' },
      });
      expect(created!.changes.name).toEqual({ from: null, to: 'History Probe' });
      expect(created!.changes.longDescription).toMatchObject({ from: null });
      expect(body.meta).toMatchObject({ slug, total: 4 });

      // A Free key sees the same entries, with the Free fields only.
      const free = await get(app, `/v1/tools/${slug}/history`, 'free');
      expect(free.body.data.map((e: Json) => Object.keys(e.changes))).toEqual([
        [],
        [],
        ['rating'],
        expect.not.arrayContaining(['longDescription', 'pricingTiers']),
      ]);
    });

    test('a slug never held: 404; an invalid slug: 400', async () => {
      expect((await get(app, '/v1/tools/never-held-here/history')).status).toBe(404);
      expect((await get(app, `/v1/tools/${'x'.repeat(101)}/history`)).status).toBe(400);
    });

    test('a bundled tool has its creation as history', async () => {
      const tool = dataset.tools[5]!;
      const { body } = await get(app, `/v1/tools/${tool.slug}/history`);
      expect(body.data).toHaveLength(1);
      expect(body.data[0]).toMatchObject({ type: 'tool.created' });
      expect(body.data[0].changes.name).toEqual({ from: null, to: tool.name });
    });

    test('pruning: a cursor behind what was pruned is 410; the log goes on after it', async () => {
      const { cursor: before } = await follow(app);
      await store.upsert([newTool({ slug: 'prune-probe', name: 'Prune Probe' })]);
      const { cursor: after } = await follow(app, before);
      // Everything written up to now is past retention; the newest entry stays.
      const removed = await store.pruneChanges(new Date(Date.now() + 1000).toISOString());
      expect(removed).toBeGreaterThan(0);
      expect((await get(app, '/v1/changes?since=' + encodeCursor(0))).status).toBe(410);
      expect((await get(app, `/v1/changes?since=${after}`)).status).toBe(200);
      await store.upsert([newTool({ slug: 'prune-probe', name: 'Prune Probe', rating: 1 })]);
      const { changes } = await follow(app, after);
      expect(changes.map((c) => [c.type, c.slug])).toEqual([['tool.updated', 'prune-probe']]);
      // History is not pruned.
      expect((await get(app, '/v1/tools/prune-probe/history')).body.data).toHaveLength(2);
    });
  });
});

describe('retention as the clock moves (CHANGES_RETENTION_DAYS)', () => {
  test('a cursor whose next change is past retention is 410; no cursor starts after them', async () => {
    const RETENTION_MS = 1_500;
    const store = new EmbeddedStore(tempDataDir(), dataset.tools);
    const app = await catalogApp(store, RETENTION_MS / DAY_MS);
    try {
      // A change written now, read at once: within retention.
      const before = (await follow(app)).cursor;
      await store.upsert([newTool()]);
      const fresh = await get(app, `/v1/changes?since=${before}`);
      expect(fresh.status).toBe(200);
      expect(fresh.body.data.map((c: Json) => c.slug)).toEqual(['zephyr-notes']);
      await sleep(RETENTION_MS + 300);
      const late = await get(app, `/v1/changes?since=${before}`);
      expect(late.status).toBe(410);
      expect(late.body.error).toMatch(/0\.0+\d+ days/);
      // From the start: nothing kept, and the cursor it gives misses nothing that follows.
      const empty = await get(app, '/v1/changes');
      expect(empty.body.data).toEqual([]);
      await store.upsert([newTool({ pricing: 'Changed pricing' })]);
      const next = await get(app, `/v1/changes?since=${empty.body.meta.nextCursor}`);
      expect(next.body.data.map((c: Json) => c.type)).toEqual(['tool.updated']);
      // A reader up to date is never told it is late, however old its last change.
      await sleep(RETENTION_MS + 300);
      const quiet = await get(app, `/v1/changes?since=${next.body.meta.nextCursor}`);
      expect(quiet.status).toBe(200);
      expect(quiet.body.data).toEqual([]);
    } finally {
      await app.close();
      await store.close();
    }
  });
});

describe('cursors outlive the process', () => {
  test('a cursor from before a restart continues where it was', async () => {
    const dataDir = tempDataDir();
    let store = new EmbeddedStore(dataDir, dataset.tools);
    let app = await catalogApp(store);
    const { cursor } = await follow(app);
    await app.close();
    await store.close();

    store = new EmbeddedStore(dataDir, dataset.tools);
    app = await catalogApp(store);
    try {
      expect((await follow(app, cursor)).changes).toEqual([]);
      await store.upsert([newTool()]);
      const { changes } = await follow(app, cursor);
      expect(changes.map((c) => c.slug)).toEqual(['zephyr-notes']);
    } finally {
      await app.close();
      await store.close();
    }
  });
});

describe('a catalog database from before histories', () => {
  test("its outbox becomes each tool's history, each update's from the entry before", async () => {
    const dataDir = tempDataDir();
    const db = new Database(path.join(dataDir, CATALOG_DATABASE_FILE));
    CATALOG_MIGRATIONS[0]!(db);
    CATALOG_MIGRATIONS[1]!(db);
    db.pragma('user_version = 2');
    const tool = newTool();
    const edited = { ...tool, rating: 1.5, updatedAt: '2025-02-01T00:00:00.000Z' };
    db.prepare('INSERT INTO tools (slug, record, deleted, updated_at) VALUES (?, ?, 0, ?)').run(
      tool.slug,
      JSON.stringify(edited),
      edited.updatedAt,
    );
    const record = db.prepare('INSERT INTO outbox (at, type, slug, payload) VALUES (?, ?, ?, ?)');
    record.run('2025-01-01T00:00:00.000Z', 'tool.created', tool.slug, JSON.stringify({ tool }));
    record.run(
      edited.updatedAt,
      'tool.updated',
      tool.slug,
      JSON.stringify({ tool: edited, changedFields: ['rating'] }),
    );
    db.close();

    const store = new EmbeddedStore(dataDir, []);
    const app = await catalogApp(store);
    try {
      const { body } = await get(app, `/v1/tools/${tool.slug}/history`);
      expect(body.data.map((e: Json) => [e.type, e.at])).toEqual([
        ['tool.updated', '2025-02-01T00:00:00.000Z'],
        ['tool.created', '2025-01-01T00:00:00.000Z'],
      ]);
      expect(body.data[0].changes).toEqual({ rating: { from: tool.rating, to: 1.5 } });
    } finally {
      await app.close();
      await store.close();
    }
  });
});
