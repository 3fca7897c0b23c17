import path from 'node:path';
import Database from 'better-sqlite3';
import { formatInstant, parseDateTime } from '../../../services/catalog/src/records/date-time';
import { ChangeClock } from '../../../services/catalog/src/store/change-clock';
import {
  CATALOG_DATABASE_FILE,
  CATALOG_MIGRATIONS,
  EmbeddedStore,
} from '../../../services/catalog/src/store/embedded-store';
import { dataset, embeddedStore, newTool } from '../../support/catalog';
import { tempDataDir } from '../../support/services';

describe('RFC 3339 date-times', () => {
  test.each([
    ['2025-06-30T12:00:00Z', '2025-06-30T12:00:00.000Z'],
    ['2025-06-30T12:00:00.123Z', '2025-06-30T12:00:00.123Z'],
    ['2025-06-30t12:00:00.1z', '2025-06-30T12:00:00.100Z'],
    ['2025-06-30 12:00:00Z', '2025-06-30T12:00:00.000Z'],
    // Fractions of a millisecond are dropped, never rounded up.
    ['2025-06-30T12:00:00.123999999Z', '2025-06-30T12:00:00.123Z'],
    ['2025-06-30T14:30:00+02:30', '2025-06-30T12:00:00.000Z'],
    ['2025-06-30T14:30:00+0230', '2025-06-30T12:00:00.000Z'],
    ['2025-06-30T14:00:00+02', '2025-06-30T12:00:00.000Z'],
    ['2025-06-30T00:00:00-12:00', '2025-06-30T12:00:00.000Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['2000-02-29T00:00:00Z', '2000-02-29T00:00:00.000Z'],
    ['0000-01-01T00:00:00Z', '0000-01-01T00:00:00.000Z'],
    ['0099-01-01T00:00:00Z', '0099-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    // A leap second is the next day's first instant, whatever the offset it is written in.
    ['2016-12-31T23:59:60Z', '2017-01-01T00:00:00.000Z'],
    ['2017-01-01T00:59:60+01:00', '2017-01-01T00:00:00.000Z'],
  ])('%s is %s', (text, canonical) => {
    expect(formatInstant(parseDateTime(text)!)).toBe(canonical);
  });

  test.each([
    '2025-06-30',
    '2025-06-30T12:00:00',
    '2025-06-30T12:00Z',
    '2025-6-30T12:00:00Z',
    '2025-02-29T00:00:00Z',
    '1900-02-29T00:00:00Z',
    '2025-04-31T00:00:00Z',
    '2025-13-01T00:00:00Z',
    '2025-00-01T00:00:00Z',
    '2025-06-00T00:00:00Z',
    '2025-06-30T24:00:00Z',
    '2025-06-30T12:60:00Z',
    '2025-06-30T12:00:60Z',
    '2025-06-30T23:59:60+01:00',
    '2025-06-30T12:00:00+24:00',
    '2025-06-30T12:00:00+01:60',
    '2025-06-30T12:00:00.Z',
    '+2025-06-30T12:00:00Z',
    '12025-06-30T12:00:00Z',
    '2025-06-30T12:00:00Z ',
    '2025-06-30T12:00:00ZZ',
    'Mon, 30 Jun 2025 12:00:00 GMT',
    '1751284800',
    '',
  ])('%j is no date-time', (text) => {
    expect(parseDateTime(text)).toBeUndefined();
  });

  test('the canonical form holds instants to the years 0000 to 9999, whose text order is time order', () => {
    expect(formatInstant(parseDateTime('0000-01-01T00:00:00+01:00')!)).toBe(
      '0000-01-01T00:00:00.000Z',
    );
    expect(formatInstant(parseDateTime('9999-12-31T23:59:59-23:59')!)).toBe(
      '9999-12-31T23:59:59.999Z',
    );
  });
});

describe('the change clock', () => {
  test('the write’s time when it is later than the last instant', () => {
    const clock = new ChangeClock('2025-06-30T12:00:00.000Z', Date.parse('2025-06-30T12:00:05Z'));
    expect([clock.next(), clock.next()]).toEqual([
      '2025-06-30T12:00:05.000Z',
      '2025-06-30T12:00:05.001Z',
    ]);
  });

  test('a millisecond after the last instant when the time is not later (a clock set back)', () => {
    const clock = new ChangeClock('2025-06-30T12:00:00.000Z', Date.parse('2025-06-30T11:00:00Z'));
    expect([clock.next(), clock.next()]).toEqual([
      '2025-06-30T12:00:00.001Z',
      '2025-06-30T12:00:00.002Z',
    ]);
    expect(new ChangeClock(null, 0).next()).toBe('1970-01-01T00:00:00.000Z');
  });
});

/** Sets a tool's instant in the database behind the store's back, as another writer could. */
function setInstant(dataDir: string, slug: string, instant: string): void {
  const db = new Database(path.join(dataDir, CATALOG_DATABASE_FILE));
  db.prepare('UPDATE tools SET updated_at = ? WHERE slug = ?').run(instant, slug);
  db.close();
}

describe('the embedded store’s change clock', () => {
  test('bundled tools are seeded at the first start, a millisecond apart, in bundle order; a restart keeps them', async () => {
    const dataDir = tempDataDir();
    const started = Date.now();
    const store = embeddedStore(dataDir);
    const instants = await Promise.all(
      dataset.tools.map(async (tool) => (await store.getTool(tool.slug))!.updatedAt),
    );
    expect(Date.parse(instants[0]!)).toBeGreaterThanOrEqual(started);
    instants.forEach((instant, i) => {
      if (i > 0)
        expect(Date.parse(instant) - Date.parse(instants[i - 1]!)).toBeGreaterThanOrEqual(1);
    });
    await store.close();
    const again = embeddedStore(dataDir);
    for (const [i, tool] of dataset.tools.entries()) {
      expect((await again.getTool(tool.slug))!.updatedAt).toBe(instants[i]);
    }
    await again.close();
  });

  test('a change is later than the latest instant stored, even one ahead of the wall clock', async () => {
    const dataDir = tempDataDir();
    const store = embeddedStore(dataDir);
    const ahead = formatInstant(Date.now() + 3_600_000);
    setInstant(dataDir, dataset.tools[0]!.slug, ahead);
    await store.upsert([newTool()]);
    expect((await store.getTool('zephyr-notes'))!.updatedAt).toBe(
      formatInstant(Date.parse(ahead) + 1),
    );
    await store.close();
  });

  test('two processes writing one DATA_DIR take their instants from the same clock', async () => {
    const dataDir = tempDataDir();
    const [one, other] = [embeddedStore(dataDir), embeddedStore(dataDir)];
    const ahead = formatInstant(Date.now() + 60_000);
    await one.upsert([newTool()]);
    setInstant(dataDir, 'zephyr-notes', ahead);
    // `other` never saw `ahead` in memory: it reads the clock under the write lock.
    await other.upsert([{ ...dataset.tools[1]!, pricing: 'Other process' }]);
    await one.upsert([{ ...dataset.tools[2]!, pricing: 'First process again' }]);
    await Promise.all([one.refresh(), other.refresh()]);
    const instants = [
      ahead,
      (await other.getTool(dataset.tools[1]!.slug))!.updatedAt,
      (await one.getTool(dataset.tools[2]!.slug))!.updatedAt,
    ];
    expect(instants.map(Date.parse)).toEqual([0, 1, 2].map((i) => Date.parse(ahead) + i));
    await Promise.all([one.close(), other.close()]);
  });

  test('a tombstone keeps its deletion’s instant: a later change is later still', async () => {
    const dataDir = tempDataDir();
    const store = embeddedStore(dataDir);
    const victim = dataset.tools[4]!.slug;
    const ahead = formatInstant(Date.now() + 60_000);
    setInstant(dataDir, victim, ahead);
    await store.delete(victim);
    await store.upsert([newTool()]);
    expect((await store.getTool('zephyr-notes'))!.updatedAt).toBe(
      formatInstant(Date.parse(ahead) + 2),
    );
    await store.close();
  });
});

describe('a catalog database from before updatedAt', () => {
  /** The catalog database as the store wrote it before `updated_at` existed (schema 1). */
  function firstSchemaDatabase(dataDir: string) {
    const db = new Database(path.join(dataDir, CATALOG_DATABASE_FILE));
    CATALOG_MIGRATIONS[0]!(db);
    db.pragma('user_version = 1');
    return db;
  }

  test('each tool gets its last change’s time from the outbox, no two the same; one the outbox lacks, the migration’s', async () => {
    const dataDir = tempDataDir();
    const db = firstSchemaDatabase(dataDir);
    const [a, b, c, d] = ['alpha', 'bravo', 'charlie', 'delta'].map((word) =>
      newTool({ slug: `${word}-tool`, name: `${word} Tool` }),
    ) as [
      ReturnType<typeof newTool>,
      ReturnType<typeof newTool>,
      ReturnType<typeof newTool>,
      ReturnType<typeof newTool>,
    ];
    const put = db.prepare('INSERT INTO tools (slug, record, deleted) VALUES (?, ?, ?)');
    const record = db.prepare('INSERT INTO outbox (at, type, slug, payload) VALUES (?, ?, ?, ?)');
    const [t1, t2, t3] = [
      '2025-01-01T00:00:00.000Z',
      '2025-02-01T00:00:00.000Z',
      '2025-03-01T00:00:00.000Z',
    ];
    // One write created a and b at t1; c was created at t2 and deleted at t3; d has no entry.
    put.run(a.slug, JSON.stringify({ ...a, pricing: 'Edited' }), 0);
    put.run(b.slug, JSON.stringify(b), 0);
    put.run(c.slug, JSON.stringify(c), 1);
    put.run(d.slug, JSON.stringify(d), 0);
    record.run(t1, 'tool.created', b.slug, JSON.stringify({ tool: b }));
    record.run(t1, 'tool.created', a.slug, JSON.stringify({ tool: a }));
    record.run(t2, 'tool.created', c.slug, JSON.stringify({ tool: c }));
    record.run(t2, 'tool.updated', a.slug, JSON.stringify({ tool: a, changedFields: ['pricing'] }));
    record.run(t3, 'tool.deleted', c.slug, JSON.stringify({ name: c.name }));
    db.close();

    const migrated = Date.now();
    const store = new EmbeddedStore(dataDir, []);
    const served = async (slug: string) => (await store.getTool(slug))?.updatedAt;
    // b's last change came first (t1), then a's (t2); d, unknown to the outbox, last.
    expect(await served(b.slug)).toBe(t1);
    expect(await served(a.slug)).toBe(t2);
    expect(await served(c.slug)).toBeUndefined();
    expect(Date.parse((await served(d.slug))!)).toBeGreaterThanOrEqual(migrated);
    const { items } = await store.listTools({ page: 1, limit: 10, sort: 'updatedAt' });
    expect(items.map((tool) => tool.slug)).toEqual([b.slug, a.slug, d.slug]);
    expect(items[1]).toMatchObject({ pricing: 'Edited', updatedAt: t2 });

    // The tombstone holds its deletion's instant; the schema is current.
    const check = new Database(path.join(dataDir, CATALOG_DATABASE_FILE), { readonly: true });
    expect(check.prepare('SELECT updated_at FROM tools WHERE slug = ?').pluck().get(c.slug)).toBe(
      t3,
    );
    expect(check.pragma('user_version', { simple: true })).toBe(CATALOG_MIGRATIONS.length);
    check.close();

    // The next change comes after all of them.
    await store.upsert([newTool()]);
    expect((await served('zephyr-notes'))! > (await served(d.slug))!).toBe(true);
    await store.close();
  });

  test('tools written in one change get instants a millisecond apart', async () => {
    const dataDir = tempDataDir();
    const db = firstSchemaDatabase(dataDir);
    const tools = ['one', 'two', 'three'].map((word) =>
      newTool({ slug: `tool-${word}`, name: `Tool ${word}` }),
    );
    const at = '2025-01-01T00:00:00.000Z';
    for (const tool of tools) {
      db.prepare('INSERT INTO tools (slug, record) VALUES (?, ?)').run(
        tool.slug,
        JSON.stringify(tool),
      );
      db.prepare('INSERT INTO outbox (at, type, slug, payload) VALUES (?, ?, ?, ?)').run(
        at,
        'tool.created',
        tool.slug,
        JSON.stringify({ tool }),
      );
    }
    db.close();
    const store = new EmbeddedStore(dataDir, []);
    const instants = await Promise.all(
      tools.map(async (tool) => (await store.getTool(tool.slug))!.updatedAt),
    );
    expect(instants).toEqual([
      '2025-01-01T00:00:00.000Z',
      '2025-01-01T00:00:00.001Z',
      '2025-01-01T00:00:00.002Z',
    ]);
    await store.close();
  });
});
