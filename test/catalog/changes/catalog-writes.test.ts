import type { FastifyInstance } from 'fastify';
import { CatalogChanges } from '../../../services/catalog/src/changes/catalog-changes';
import { formatInstant } from '../../../services/catalog/src/records/date-time';
import {
  InvalidToolsError,
  formatProblem,
} from '../../../services/catalog/src/records/tool-validator';
import type { Tool } from '../../../services/catalog/src/schemas/tool';
import type { CatalogStore } from '../../../services/catalog/src/store/catalog-store';
import { LocalChangeFeed } from '../../../services/shared/change-feed/local-change-feed';
import {
  asTier,
  buildTestCatalog,
  dataset,
  newTool,
  withoutProvenance,
} from '../../support/catalog';
import { tempDataDir } from '../../support/services';
import { onEveryStore } from '../../support/store-suites';
import { PROPAGATION_MS } from '../../support/waits';

/**
 * The write half of the storage contract (docs/api.md#catalog-changes-and-freshness) on every
 * store: what each write reports, what it records in the outbox, and what the read side serves
 * right after it.
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
      const [entry] = await store.changesSince(before, 10);
      expect(entry).toMatchObject({
        type: 'tool.created',
        tool: { ...tool, updatedAt: expect.any(String) },
      });
      const served = (await get('/v1/tools/zephyr-notes')).body.data;
      expect(served).toEqual({ ...tool, updatedAt: (entry as { tool: Tool }).tool.updatedAt });
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

    describe('source and verifiedAt (provenance)', () => {
      const served = async (slug: string, tier: 'free' | 'pro' = 'pro') =>
        (await get(`/v1/tools/${slug}`, tier)).body.data as Tool;

      test('a new record without them: its website, verified at the time of the write', async () => {
        const before = formatInstant(Date.now());
        const summary = await changes.upsert([withoutProvenance(newTool())]);
        const after = formatInstant(Date.now());
        expect(summary.created).toEqual(['zephyr-notes']);
        const tool = await served('zephyr-notes', 'free');
        expect(tool.source).toBe(newTool().website);
        expect(tool.verifiedAt >= before && tool.verifiedAt <= after).toBe(true);
        expect(formatInstant(Date.parse(tool.verifiedAt))).toBe(tool.verifiedAt);
      });

      test('a record without them keeps the stored ones: unchanged, or changed elsewhere', async () => {
        const stored = dataset.tools[16]!;
        const start = store.version;
        const again = await changes.upsert([withoutProvenance(stored)]);
        expect(again).toMatchObject({ unchanged: [stored.slug], version: start });
        expect(await store.changesSince(start, 10)).toEqual([]);
        const edited = await changes.upsert([{ ...withoutProvenance(stored), pricing: 'Edited' }]);
        expect(edited.updated).toEqual([{ slug: stored.slug, changedFields: ['pricing'] }]);
        expect(await served(stored.slug)).toMatchObject({
          pricing: 'Edited',
          source: stored.source,
          verifiedAt: stored.verifiedAt,
        });
      });

      test('what the record says wins, and is a change like any other', async () => {
        const stored = dataset.tools[17]!;
        const summary = await changes.upsert([
          {
            ...stored,
            source: 'https://example.com/pricing',
            verifiedAt: '2025-08-01T02:00:00+02:00',
          },
        ]);
        expect(summary.updated).toEqual([
          { slug: stored.slug, changedFields: ['source', 'verifiedAt'] },
        ]);
        // Stored in the canonical form, so sending it in another form changes nothing.
        expect(await served(stored.slug, 'free')).toMatchObject({
          source: 'https://example.com/pricing',
          verifiedAt: '2025-08-01T00:00:00.000Z',
        });
        const same = {
          ...stored,
          source: 'https://example.com/pricing',
          verifiedAt: '2025-08-01T00:00:00Z',
        };
        expect((await changes.upsert([same])).unchanged).toEqual([stored.slug]);
        // The history tells it, to every tier.
        const history = (await get(`/v1/tools/${stored.slug}/history`, 'free')).body.data;
        expect(history[0].changes).toEqual({
          source: { from: stored.source, to: 'https://example.com/pricing' },
          verifiedAt: { from: stored.verifiedAt, to: '2025-08-01T00:00:00.000Z' },
        });
      });

      test('a deleted tool imported again without them starts afresh', async () => {
        const victim = dataset.tools[18]!;
        await changes.delete(victim.slug);
        const before = formatInstant(Date.now());
        await changes.upsert([withoutProvenance(victim)]);
        const tool = await served(victim.slug);
        expect(tool.source).toBe(victim.website);
        expect(tool.verifiedAt >= before).toBe(true);
      });

      test('an invalid source or verifiedAt is refused, naming the field', async () => {
        const error = await changes
          .upsert([
            newTool({ source: 'ftp://example.com/prices' }),
            newTool({ slug: 'later-tool', name: 'Later Tool', verifiedAt: '2999-01-01T00:00:00Z' }),
          ])
          .catch((err: unknown) => err);
        expect(error).toBeInstanceOf(InvalidToolsError);
        expect((error as InvalidToolsError).problems.map(formatProblem)).toEqual([
          'zephyr-notes: source: ftp://example.com/prices is not an http:// or https:// URL',
          'later-tool: verifiedAt: 2999-01-01T00:00:00Z is in the future',
        ]);
      });
    });

    describe('updatedAt', () => {
      const newest = async () =>
        (await get('/v1/tools?sort=-updatedAt&limit=1')).body.data[0].updatedAt as string;
      const updatedAtOf = async (slug: string) =>
        (await get(`/v1/tools/${slug}`)).body.data.updatedAt as string;

      test('each change gets an instant later than every earlier one, at or after its write’s time', async () => {
        const start = store.version;
        const before = await newest();
        const [a, b] = [dataset.tools[10]!, dataset.tools[11]!];
        await changes.upsert([
          newTool(),
          { ...a, pricing: 'Changed once' },
          { ...b, pricing: 'Changed too' },
        ]);
        await changes.upsert([{ ...a, pricing: 'Changed twice' }]);
        await changes.delete(b.slug);
        const entries = await store.changesSince(start, 10);
        expect(entries.map((e) => e.type)).toEqual([
          'tool.created',
          'tool.updated',
          'tool.updated',
          'tool.updated',
          'tool.deleted',
        ]);
        const instants = entries.flatMap((e) =>
          e.type === 'tool.deleted' ? [] : [e.tool.updatedAt],
        );
        expect(instants[0]! > before).toBe(true);
        expect(instants).toEqual([...new Set(instants)].sort());
        // Each instant is its write's, moved on only as far as the change clock needs to stay
        // ahead of every earlier one: within the second every replica serves a change in.
        for (const entry of entries.slice(0, 4)) {
          const lag = Date.parse((entry as { tool: Tool }).tool.updatedAt) - Date.parse(entry.at);
          expect(lag).toBeGreaterThanOrEqual(0);
          expect(lag).toBeLessThan(PROPAGATION_MS);
        }
        expect(await updatedAtOf('zephyr-notes')).toBe(instants[0]);
        expect(await updatedAtOf(a.slug)).toBe(instants[3]);
      });

      test('an unchanged upsert, a re-imported export included, moves no updatedAt', async () => {
        const tool = dataset.tools[12]!;
        const before = await updatedAtOf(tool.slug);
        const exported = (await get(`/v1/tools/${tool.slug}`)).body.data;
        expect((await changes.upsert([tool])).unchanged).toEqual([tool.slug]);
        expect((await changes.upsert([exported])).unchanged).toEqual([tool.slug]);
        expect(await updatedAtOf(tool.slug)).toBe(before);
        const all: Tool[] = [];
        for await (const t of store.exportTools()) all.push(t);
        await changes.upsert(all);
        expect(await updatedAtOf(tool.slug)).toBe(before);
      });

      test('a record’s own updatedAt is never stored, nor its change: the server’s clock sets it', async () => {
        const start = store.version;
        const forged = '2999-01-01T00:00:00.000Z';
        const summary = await changes.upsert([
          { ...newTool(), updatedAt: forged },
          { ...dataset.tools[13]!, pricing: 'Edited', updatedAt: '2000-01-01T00:00:00Z' },
        ]);
        expect(summary.updated).toEqual([
          { slug: dataset.tools[13]!.slug, changedFields: ['pricing'] },
        ]);
        const instants = (await store.changesSince(start, 10)).map(
          (e) => (e as { tool: Tool }).tool.updatedAt,
        );
        expect(await updatedAtOf('zephyr-notes')).toBe(instants[0]);
        expect(await updatedAtOf(dataset.tools[13]!.slug)).toBe(instants[1]);
        expect(instants[1]! < '2100-01-01').toBe(true);
        // The next change is after the server's instants, not after the forged one.
        await changes.upsert([newTool({ pricing: 'Again' })]);
        expect(await updatedAtOf('zephyr-notes')).not.toBe(forged);
        expect((await updatedAtOf('zephyr-notes')) < '2100-01-01').toBe(true);
      });

      test('a record whose updatedAt is no date-time is refused, naming the field', async () => {
        const error = await changes
          .upsert([{ ...newTool(), updatedAt: 'last tuesday' }])
          .catch((err: unknown) => err);
        expect(error).toBeInstanceOf(InvalidToolsError);
        expect((error as Error).message).toMatch(/zephyr-notes: updatedAt: .*date-time/);
      });

      test('updatedSince: a deleted tool is not listed; created again, it is, at a new instant', async () => {
        const since = await newest();
        const victim = dataset.tools[14]!;
        const first = await updatedAtOf(victim.slug);
        await changes.delete(victim.slug);
        const listed = async () =>
          (await get(`/v1/tools?updatedSince=${since}&sort=updatedAt`)).body.data.map(
            (t: Tool) => t.slug,
          );
        expect(await listed()).toEqual([]);
        await changes.upsert([victim]);
        expect(await listed()).toEqual([victim.slug]);
        expect((await updatedAtOf(victim.slug)) > first).toBe(true);
      });

      test('a seed stamps the bundled tools it adds later than every change before it', async () => {
        const victim = dataset.tools[15]!;
        await changes.delete(victim.slug);
        const since = await newest();
        const added = newTool({ slug: 'bundled-later', name: 'Bundled Later' });
        const summary = await store.seed([...dataset.tools, added]);
        expect(summary.created).toEqual(['bundled-later']);
        const listed = (await get(`/v1/tools?updatedSince=${since}`)).body.data;
        expect(listed.map((t: Tool) => t.slug)).toEqual(['bundled-later']);
      });
    });
  });
});
