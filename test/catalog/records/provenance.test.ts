import Database from 'better-sqlite3';
import path from 'node:path';
import {
  UNVERIFIED_AT,
  withOlderProvenance,
  withProvenance,
} from '../../../services/catalog/src/records/provenance';
import type { ToolRecord } from '../../../services/catalog/src/schemas/tool';
import {
  CATALOG_DATABASE_FILE,
  CATALOG_MIGRATIONS,
  EmbeddedStore,
} from '../../../services/catalog/src/store/embedded-store';
import { newTool, withoutProvenance } from '../../support/catalog';
import { tempDataDir } from '../../support/services';

/**
 * A record's provenance (docs/dataset-format.md): `source` and `verifiedAt` as a write stores
 * them, whatever an import or an admin write left out, and for records stored before they existed.
 */

const AT = '2026-03-04T05:06:07.089Z';
const stored = newTool({
  source: 'https://zephyr.example/pricing',
  verifiedAt: '2026-01-01T00:00:00.000Z',
});

const bare = (record: ToolRecord) => withoutProvenance(record);

describe('withProvenance', () => {
  test('a new record without them: its website, checked at the time of the write', () => {
    expect(withProvenance(bare(stored), undefined, AT)).toEqual({
      ...bare(stored),
      source: stored.website,
      verifiedAt: AT,
    });
  });

  test('a record without them keeps the stored ones, each on its own', () => {
    const record = { ...bare(stored), pricing: 'Changed' };
    expect(withProvenance(record, stored, AT)).toEqual({
      ...record,
      source: stored.source,
      verifiedAt: stored.verifiedAt,
    });
    const checkedNow = withProvenance({ ...record, verifiedAt: AT }, stored, AT);
    expect(checkedNow).toMatchObject({ source: stored.source, verifiedAt: AT });
    const moved = withProvenance({ ...record, source: 'https://zephyr.example/plans' }, stored, AT);
    expect(moved).toMatchObject({
      source: 'https://zephyr.example/plans',
      verifiedAt: stored.verifiedAt,
    });
  });

  test('what the record says wins; verifiedAt is stored in the canonical form', () => {
    const record = {
      ...stored,
      source: 'http://zephyr.example/docs',
      verifiedAt: '2026-02-01 01:30:00.5+01:30',
    };
    expect(withProvenance(record, stored, AT)).toMatchObject({
      source: 'http://zephyr.example/docs',
      verifiedAt: '2026-02-01T00:00:00.500Z',
    });
  });

  test('any other field, an export’s updatedAt included, is passed on as it is', () => {
    const exported = { ...stored, updatedAt: '2026-02-02T00:00:00.000Z' };
    expect(withProvenance(exported, stored, AT)).toEqual(exported);
    expect(withProvenance(exported, undefined, AT)).toEqual(exported);
  });
});

describe('withOlderProvenance', () => {
  test('a record stored before provenance: its website, verified at the epoch', () => {
    expect(UNVERIFIED_AT).toBe('1970-01-01T00:00:00.000Z');
    expect(withOlderProvenance(bare(stored))).toEqual({
      ...bare(stored),
      source: stored.website,
      verifiedAt: UNVERIFIED_AT,
    });
    expect(withOlderProvenance(stored)).toBe(stored);
  });
});

describe('a catalog database from before provenance', () => {
  test('its tools and outbox get their website as source and the epoch as verifiedAt', async () => {
    const dataDir = tempDataDir();
    const db = new Database(path.join(dataDir, CATALOG_DATABASE_FILE));
    for (const migration of CATALOG_MIGRATIONS.slice(0, 3)) migration(db);
    db.pragma('user_version = 3');
    const tool = { ...bare(newTool()), updatedAt: '2025-01-01T00:00:00.000Z' };
    const gone = {
      ...bare(newTool({ slug: 'gone-tool', name: 'Gone Tool' })),
      updatedAt: tool.updatedAt,
    };
    const put = db.prepare(
      'INSERT INTO tools (slug, record, deleted, updated_at) VALUES (?, ?, ?, ?)',
    );
    put.run(tool.slug, JSON.stringify(tool), 0, tool.updatedAt);
    put.run(gone.slug, JSON.stringify(gone), 1, '2025-01-02T00:00:00.000Z');
    const record = db.prepare('INSERT INTO outbox (at, type, slug, payload) VALUES (?, ?, ?, ?)');
    record.run(tool.updatedAt, 'tool.created', tool.slug, JSON.stringify({ tool }));
    record.run(tool.updatedAt, 'tool.created', gone.slug, JSON.stringify({ tool: gone }));
    record.run('2025-01-02T00:00:00.000Z', 'tool.deleted', gone.slug, '{"name":"Gone Tool"}');
    db.close();

    const store = new EmbeddedStore(dataDir, []);
    try {
      const older = { source: tool.website, verifiedAt: UNVERIFIED_AT };
      expect(await store.getTool(tool.slug)).toEqual({ ...tool, ...older });
      const entries = await store.changesSince(0, 10);
      expect(entries.map((entry) => entry.type)).toEqual([
        'tool.created',
        'tool.created',
        'tool.deleted',
      ]);
      expect(entries[0]).toMatchObject({ tool: { ...tool, ...older } });
      expect(entries[2]).toEqual(expect.not.objectContaining({ tool: expect.anything() }));
      // Never verified: listed by any verifiedBefore after the epoch.
      const stale = await store.listTools({
        page: 1,
        limit: 10,
        sort: 'name',
        verifiedBefore: '1970-01-01T00:00:00.001Z',
      });
      expect(stale.items.map((t) => t.slug)).toEqual([tool.slug]);
      // Imported again as it was, it keeps them; with its own, it takes those.
      const summary = await store.upsert([bare(newTool())]);
      expect(summary.unchanged).toEqual([tool.slug]);
      const checked = await store.upsert([newTool()]);
      expect(checked.updated).toEqual([
        { slug: tool.slug, changedFields: ['source', 'verifiedAt'] },
      ]);
    } finally {
      await store.close();
    }
  });
});
