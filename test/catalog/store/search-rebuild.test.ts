import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import Database from 'better-sqlite3';
import type { Tool, ToolRecord } from '../../../services/catalog/src/schemas/tool';
import { CatalogSnapshot } from '../../../services/catalog/src/store/catalog-snapshot';
import { TOOL_SORTS } from '../../../services/catalog/src/schemas/api';
import type { SearchPage } from '../../../services/catalog/src/store/catalog-store';
import {
  CATALOG_DATABASE_FILE,
  type EmbeddedStore,
} from '../../../services/catalog/src/store/embedded-store';
import { toolComparator } from '../../../services/catalog/src/store/query-semantics';
import { dataset, embeddedStore, newTool } from '../../support/catalog';
import { tempDataDir } from '../../support/services';
import { loadSearchFixtures } from './search/search-relevance';

/**
 * How the embedded store takes in changes: a few at once, in the step that swaps snapshots; many
 * a slice at a time while the old snapshot serves (the catalog CLI's import of thousands of
 * tools must not stall requests). Either way the next snapshot is the store's truth.
 */

const made = (count: number, from = 0): ToolRecord[] =>
  Array.from({ length: count }, (_, i) =>
    newTool({ slug: `made-${from + i}`, name: `Madeup Tool ${from + i}` }),
  );

/** The live rows of the database. */
function liveTools(dataDir: string): Tool[] {
  const db = new Database(path.join(dataDir, CATALOG_DATABASE_FILE), { readonly: true });
  const rows = db.prepare('SELECT record FROM tools WHERE deleted = 0').all() as {
    record: string;
  }[];
  db.close();
  return rows.map((row) => JSON.parse(row.record) as Tool);
}

/** What a search page ranks: hits and scores, the total and the facets. */
const ranking = ({ items, total, facets }: SearchPage) => ({
  hits: items.map((hit) => `${hit.slug} ${hit.score}`),
  total,
  facets,
});

/** Everything the snapshot serves, against the live rows of the database. */
async function expectConsistent(store: EmbeddedStore, dataDir: string): Promise<void> {
  const live = liveTools(dataDir);
  for (const sort of TOOL_SORTS) {
    const { items, total } = await store.listTools({ page: 1, limit: live.length + 1, sort });
    expect(total).toBe(live.length);
    expect(items.map((t) => t.slug)).toEqual(
      [...live].sort(toolComparator(sort)).map((t) => t.slug),
    );
  }
  const counted = (await store.listCategories()).reduce((sum, c) => sum + c.toolCount, 0);
  expect(counted).toBe(live.length);
  for (const tool of live.slice(-3)) {
    const { items } = await store.search({ text: tool.name, limit: 1 });
    expect(items[0]?.slug).toBe(tool.slug);
  }
}

describe('the embedded store takes in changes', () => {
  let dataDir: string;
  let store: EmbeddedStore;
  let writer: EmbeddedStore;

  beforeEach(() => {
    dataDir = tempDataDir();
    store = embeddedStore(dataDir);
    // Another process's store on the same DATA_DIR: the catalog CLI.
    writer = embeddedStore(dataDir);
  });
  afterEach(async () => {
    await Promise.all([store.close(), writer.close()]);
  });

  test('a few changes: updated, renamed, deleted, created, all served in order', async () => {
    const [renamed, removed] = dataset.tools as [ToolRecord, ToolRecord];
    await writer.upsert([{ ...renamed, name: 'Quixotic Renamed', rating: 0.1 }, ...made(2)]);
    await writer.delete(removed.slug);
    await store.refresh();
    expect(store.version).toBe(writer.version);
    expect((await store.search({ text: 'Quixotic Renamed', limit: 1 })).items[0]?.slug).toBe(
      renamed.slug,
    );
    expect(
      (await store.search({ text: renamed.name, limit: 50 })).items.map((t) => t.slug),
    ).not.toContain(renamed.slug);
    expect(await store.getTool(removed.slug)).toBeNull();
    await expectConsistent(store, dataDir);
  });

  test('many changes are built a slice at a time while the old snapshot serves', async () => {
    const before = store.version;
    const renamed = dataset.tools[0]!;
    await writer.upsert([...made(1000), { ...renamed, name: 'Quixotic Renamed' }]);
    const firstHit = async (text: string) =>
      (await store.search({ text, limit: 1 })).items[0]?.slug;
    let turns = 0;
    let done = false;
    const refreshed = store.refresh().then(() => (done = true));
    while (!done) {
      // Requests meanwhile get the old snapshot, whole: its records and its search index.
      expect(store.version).toBe(before);
      expect(await firstHit('Madeup Tool 999')).not.toBe('made-999');
      expect(await firstHit(renamed.name)).toBe(renamed.slug);
      expect(await firstHit('Quixotic Renamed')).not.toBe(renamed.slug);
      turns += 1;
      await nextTurn();
    }
    await refreshed;
    // Served between slices: more than one turn (how many follows the machine's speed).
    expect(turns).toBeGreaterThan(1);
    expect(store.version).toBe(writer.version);
    expect(await firstHit('Quixotic Renamed')).toBe(renamed.slug);
    await expectConsistent(store, dataDir);
  });

  test('a write from this process is served when it returns, however many it holds', async () => {
    const summary = await store.upsert(made(250));
    expect(summary.version).toBe(store.version);
    expect((await store.getTool('made-249'))?.name).toBe('Madeup Tool 249');
    await expectConsistent(store, dataDir);
  });

  test('refreshes that overlap share the work and end at the latest version', async () => {
    const first = writer.upsert(made(150));
    const refreshes = [store.refresh(), store.refresh()];
    await first;
    await writer.upsert(made(3, 500));
    refreshes.push(store.refresh());
    await Promise.all(refreshes);
    expect(store.version).toBe(writer.version);
    await expectConsistent(store, dataDir);
  });

  test('search ranks as in a snapshot built afresh from the same records, change after change', async () => {
    // Each round is taken into the index the round before retired (see EmbeddedStore).
    const tools = dataset.tools;
    const rounds: (() => Promise<unknown>)[] = [
      () =>
        writer.upsert(
          tools.slice(0, 150).map((tool, i) => ({
            ...tool,
            name: i % 3 === 0 ? `${tool.name} Cloud` : tool.name,
            description: `${tool.description} Now with agents and a vector store.`,
            tags: i % 2 === 0 ? [...tool.tags, 'agents'] : tool.tags,
          })),
        ),
      async () => {
        for (const tool of tools.slice(150, 155)) await writer.delete(tool.slug);
        await writer.upsert([...made(30), ...tools.slice(150, 152)]);
      },
      // Back as they were, and ratings changed only: terms the same.
      () =>
        writer.upsert([
          ...tools.slice(0, 150),
          ...tools.slice(155).map((tool) => ({ ...tool, rating: 0.5 })),
        ]),
    ];
    const queries = [
      ...loadSearchFixtures(),
      { q: 'agents vector store' },
      { q: 'madeup tool' },
      { q: 'cloud', category: tools[0]!.category },
    ];
    for (const round of rounds) {
      await round();
      await store.refresh();
      const fresh = CatalogSnapshot.build(liveTools(dataDir), store.version);
      for (const { q, category } of queries) {
        const request = { text: q, limit: 10, category };
        expect({ q, ...ranking(await store.search(request)) }).toEqual({
          q,
          ...ranking(fresh.search(request)),
        });
      }
    }
  });

  test('when outbox entries are missing, the tools table says where things stand', async () => {
    await writer.upsert(made(120));
    const db = new Database(path.join(dataDir, CATALOG_DATABASE_FILE));
    const last = db.prepare('SELECT max(version) FROM outbox').pluck().get() as number;
    db.prepare('DELETE FROM outbox WHERE version BETWEEN ? AND ?').run(last - 100, last - 50);
    db.close();
    await store.refresh();
    expect(store.version).toBe(last);
    await expectConsistent(store, dataDir);
  });
});
