import type { FastifyInstance } from 'fastify';
import { CatalogChanges } from '../../services/catalog/src/changes/catalog-changes';
import { InvalidToolsError } from '../../services/catalog/src/records/tool-validator';
import type { Tool } from '../../services/catalog/src/schemas/tool';
import type { CatalogStore } from '../../services/catalog/src/store/catalog-store';
import { LocalChangeFeed } from '../../services/shared/change-feed/local-change-feed';
import { asTier, buildTestCatalog, dataset, newTool } from '../support/catalog';
import { tempDataDir } from '../support/services';
import { onEveryStore } from '../support/store-suites';

/**
 * The write half of the storage contract (SPEC B9) on every store: what each write reports,
 * what it records in the outbox, and what the read side serves right after it.
 */
onEveryStore('catalog-writes', (storeName, openStore) => {
  describe(`catalog writes on the ${storeName} store`, () => {
    let store: CatalogStore;
    let changes: CatalogChanges;
    let app: FastifyInstance;
    let feed: LocalChangeFeed;

    beforeEach(async () => {
      store = await openStore();
      feed = new LocalChangeFeed(tempDataDir());
      changes = new CatalogChanges(store, feed);
      app = await buildTestCatalog(store);
    });
    afterEach(async () => {
      await app.close();
      await feed.close();
      await store.close();
    });

    const get = async (url: string, tier: 'free' | 'pro' = 'pro') => {
      const res = await app.inject({ url, headers: asTier(tier) });
      return { status: res.statusCode, body: res.json(), etag: res.headers.etag };
    };

    test('create: served at once by list, detail, search and category counts', async () => {
      const before = store.version;
      const tool = newTool();
      const summary = await changes.upsert([tool]);
      expect(summary).toMatchObject({ created: ['zephyr-notes'], updated: [], unchanged: [] });
      expect(summary.version).toBeGreaterThan(before);
      expect(store.version).toBe(summary.version);
      expect((await get('/v1/tools/zephyr-notes')).body.data).toEqual(tool);
      const search = await get('/v1/search?q=zephyr');
      expect(search.body.data[0].slug).toBe('zephyr-notes');
      const list = await get(`/v1/tools?limit=100&search=zephyr`);
      expect(list.body.meta.total).toBe(1);
      const categories = (await get('/v1/categories')).body.data as {
        name: string;
        toolCount: number;
      }[];
      const counted = dataset.tools.filter((t) => t.category === tool.category).length;
      expect(categories.find((c) => c.name === tool.category)?.toolCount).toBe(counted + 1);
    });

    test('update: changed fields reported, old data gone everywhere, a new ETag', async () => {
      await changes.upsert([newTool()]);
      const first = await get('/v1/tools/zephyr-notes');
      const summary = await changes.upsert([
        newTool({ pricing: 'Free forever', tags: ['open-source', 'free-tier', 'api'] }),
      ]);
      expect(summary.updated).toEqual([
        { slug: 'zephyr-notes', changedFields: ['pricing', 'tags'] },
      ]);
      const second = await get('/v1/tools/zephyr-notes');
      expect(second.body.data.pricing).toBe('Free forever');
      expect(second.etag).toBeDefined();
      expect(second.etag).not.toBe(first.etag);
    });

    test('an unchanged record is reported unchanged and records nothing', async () => {
      const existing = dataset.tools[3]!;
      const before = store.version;
      const summary = await changes.upsert([existing]);
      expect(summary).toMatchObject({ created: [], updated: [], unchanged: [existing.slug] });
      expect(summary.version).toBe(before);
      expect(await store.changesSince(before, 10)).toEqual([]);
    });

    test('re-importing the whole export changes nothing (the rollback path)', async () => {
      const exported: Tool[] = [];
      for await (const tool of store.exportTools()) exported.push(tool);
      const summary = await changes.upsert(exported);
      expect(summary.unchanged).toHaveLength(dataset.tools.length);
      expect(summary.created.length + summary.updated.length).toBe(0);
    });

    test('delete: 404 and out of search at once, a tombstone that a seed does not undo', async () => {
      const victim = dataset.tools[5]!;
      const summary = await changes.delete(victim.slug);
      expect(summary?.deleted).toEqual([victim.slug]);
      expect((await get(`/v1/tools/${victim.slug}`)).status).toBe(404);
      const search = await get(`/v1/search?q=${encodeURIComponent(victim.name)}`);
      expect(search.body.data.map((t: Tool) => t.slug)).not.toContain(victim.slug);
      expect(await changes.delete(victim.slug)).toBeNull();
      const seeded = await store.seed(dataset.tools);
      expect(seeded.created).toEqual([]);
      expect((await get(`/v1/tools/${victim.slug}`)).status).toBe(404);
    });

    test('a seed never undoes an operator edit', async () => {
      const edited = { ...dataset.tools[7]!, pricing: 'Edited by an operator' };
      await changes.upsert([edited]);
      await store.seed(dataset.tools);
      expect((await get(`/v1/tools/${edited.slug}`)).body.data.pricing).toBe(
        'Edited by an operator',
      );
    });

    test('an invalid record among valid ones changes nothing and names the record and field', async () => {
      const before = store.version;
      const bad = newTool({ slug: 'broken-tool', name: 'Broken Tool', rating: 7 });
      const error = await changes.upsert([newTool(), bad]).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(InvalidToolsError);
      expect((error as Error).message).toMatch(/broken-tool: rating/);
      expect(store.version).toBe(before);
      expect((await get('/v1/tools/zephyr-notes')).status).toBe(404);
    });

    test('a new tool may not take a stored tool’s name', async () => {
      const taken = dataset.tools[2]!.name;
      await expect(changes.upsert([newTool({ name: taken })])).rejects.toBeInstanceOf(
        InvalidToolsError,
      );
    });

    test('the outbox holds every change once, in version order, with its data', async () => {
      const start = store.version;
      await changes.upsert([newTool()]);
      await changes.upsert([newTool({ pricing: 'Paid' })]);
      await changes.delete('zephyr-notes');
      const entries = await store.changesSince(start, 10);
      expect(entries.map((e) => e.type)).toEqual(['tool.created', 'tool.updated', 'tool.deleted']);
      const versions = entries.map((e) => e.version);
      expect(versions).toEqual([...versions].sort((a, b) => a - b));
      expect(new Set(versions).size).toBe(3);
      expect(entries[1]).toMatchObject({ slug: 'zephyr-notes', changedFields: ['pricing'] });
      expect(entries[2]).toMatchObject({ slug: 'zephyr-notes', name: 'Zephyr Notes' });
    });
  });
});
