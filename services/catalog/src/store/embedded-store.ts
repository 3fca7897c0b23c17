import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  type EmbeddedDatabase,
  openEmbeddedDatabase,
} from '../../../shared/embedded/embedded-database';
import { UNVERIFIED_AT, withProvenance } from '../records/provenance';
import type { Category, Tool, ToolRecord, ToolRecordInput } from '../schemas/tool';
import type {
  CatalogStore,
  ChangeLogPage,
  ChangeLogQuery,
  ChangeSummary,
  OutboxEntry,
  Page,
  SearchPage,
  SearchRequest,
  ToolChange,
  ToolQuery,
} from './catalog-store';
import { CatalogSnapshot } from './catalog-snapshot';
import { ChangeClock, stamped } from './change-clock';
import { Slices } from './search/slices';
import type { ToolIndex } from './search/tool-index';
import { changedFields } from './tool-diff';
import {
  type FieldChanges,
  type HistoryEntry,
  fieldChanges,
  historyFromOutbox,
} from './tool-history';

export const CATALOG_DATABASE_FILE = 'catalog.db';

/** The catalog database's schema steps, in order (embedded-database.ts runs them). */
export const CATALOG_MIGRATIONS = [
  (db: EmbeddedDatabase) =>
    db.exec(`
      -- Every tool the catalog has held; a deleted one stays as a tombstone (deleted = 1).
      CREATE TABLE tools (
        slug TEXT PRIMARY KEY,
        record TEXT NOT NULL,
        deleted INTEGER NOT NULL DEFAULT 0
      );
      -- The outbox: one row per change, its version increasing with every change.
      CREATE TABLE outbox (
        version INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        type TEXT NOT NULL,
        slug TEXT NOT NULL,
        payload TEXT NOT NULL
      );`),
  (db: EmbeddedDatabase) => {
    db.exec(`
      -- The instant of each tool's last change on the change clock (a tombstone's: its deletion),
      -- also in the record as updatedAt; the latest of them is where the clock stands.
      ALTER TABLE tools ADD COLUMN updated_at TEXT;
      CREATE INDEX tools_updated_at ON tools (updated_at);`);
    stampFromOutbox(db);
  },
  (db: EmbeddedDatabase) => {
    db.exec(`
      -- Each change's field-level changes, kept as long as the slug (tombstones included).
      CREATE TABLE history (
        version INTEGER PRIMARY KEY,
        slug TEXT NOT NULL,
        at TEXT NOT NULL,
        type TEXT NOT NULL,
        changes TEXT NOT NULL
      );
      CREATE INDEX history_slug ON history (slug, version);
      -- The outbox is pruned by age; the last version pruned tells a reader it missed changes.
      CREATE INDEX outbox_at ON outbox (at);
      CREATE TABLE outbox_pruned (id INTEGER PRIMARY KEY CHECK (id = 1), through INTEGER NOT NULL);
      INSERT INTO outbox_pruned (id, through) VALUES (1, 0);`);
    historyOfOutbox(db);
  },
  (db: EmbeddedDatabase) => provenanceOfOlderRecords(db),
];

/**
 * Gives every record stored before provenance existed (records/provenance.ts), in `tools` and in
 * the outbox, its website as `source` and UNVERIFIED_AT as `verifiedAt`.
 */
function provenanceOfOlderRecords(db: EmbeddedDatabase): void {
  // `column` holds the JSON, `path` is where the tool is in it.
  const field = (column: string, path: string, name: string) =>
    `json_extract(${column}, '${path}.${name}')`;
  const filled = (column: string, path: string) =>
    `json_set(${column},
       '${path}.source', coalesce(${field(column, path, 'source')}, ${field(column, path, 'website')}),
       '${path}.verifiedAt', coalesce(${field(column, path, 'verifiedAt')}, @unverified))`;
  const lacking = (column: string, path: string) =>
    `(${field(column, path, 'source')} IS NULL OR ${field(column, path, 'verifiedAt')} IS NULL)`;
  const unverified = { unverified: UNVERIFIED_AT };
  db.prepare(
    `UPDATE tools SET record = ${filled('record', '$')} WHERE ${lacking('record', '$')}`,
  ).run(unverified);
  db.prepare(
    `UPDATE outbox SET payload = ${filled('payload', '$.tool')}
     WHERE type <> 'tool.deleted' AND ${lacking('payload', '$.tool')}`,
  ).run(unverified);
}

/** Fills the history of a store that had an outbox before it had a history. */
function historyOfOutbox(db: EmbeddedDatabase): void {
  const rows = db.prepare<[], OutboxRow>('SELECT * FROM outbox ORDER BY version').all();
  const insert = db.prepare<[number, string, string, string, string]>(
    'INSERT INTO history (version, slug, at, type, changes) VALUES (?, ?, ?, ?, ?)',
  );
  for (const entry of historyFromOutbox(rows.map(fromOutboxRow))) {
    insert.run(entry.version, entry.slug, entry.at, entry.type, JSON.stringify(entry.changes));
  }
}

function fromOutboxRow(row: OutboxRow): OutboxEntry {
  const { version, at, type, slug, payload } = row;
  return { version, at, type, slug, ...JSON.parse(payload) } as OutboxEntry;
}

/**
 * Gives every tool stored before `updated_at` existed the instant of its last change: its last
 * outbox entry's time, in the order of those entries, run through the change clock so that no
 * two tools share an instant (a tool the outbox does not know gets the migration's time).
 */
function stampFromOutbox(db: EmbeddedDatabase): void {
  const rows = db
    .prepare<[], { slug: string; at: string | null }>(
      `SELECT tools.slug, outbox.at FROM tools
       LEFT JOIN (SELECT slug, max(version) AS version FROM outbox GROUP BY slug) AS latest
         ON latest.slug = tools.slug
       LEFT JOIN outbox ON outbox.version = latest.version
       ORDER BY latest.version IS NULL, latest.version, tools.slug`,
    )
    .all();
  const stamp = db.prepare<{ at: string; slug: string }>(
    `UPDATE tools SET updated_at = @at, record = json_set(record, '$.updatedAt', @at)
     WHERE slug = @slug`,
  );
  const now = Date.now();
  let last: string | null = null;
  for (const { slug, at } of rows) {
    last = new ChangeClock(last, at === null ? now : Date.parse(at)).next();
    stamp.run({ at: last, slug });
  }
}

interface ToolRow {
  /** The record as served, `updatedAt` included. */
  record: string;
  deleted: number;
}

interface OutboxRow {
  version: number;
  at: string;
  type: ToolChange['type'];
  slug: string;
  payload: string;
}

function emptySummary(): ChangeSummary {
  return { created: [], updated: [], unchanged: [], deleted: [], version: 0 };
}

/** Outbox entries read at a time while catching up. */
const CATCH_UP_PAGE = 200;

/** Whether entries follow `version` one by one, none missing. */
function follows(entries: readonly OutboxEntry[], version: number): boolean {
  return entries.every((entry, i) => entry.version === version + i + 1);
}

/** A spare index once ready; none if making it failed (the next rebuild then makes one). */
function spareWhenReady(index: Promise<ToolIndex>): Promise<ToolIndex | undefined> {
  return index.catch(() => undefined);
}

/**
 * The embedded store: the catalog in `DATA_DIR/catalog.db` (SQLite), served from an immutable
 * in-memory snapshot. The bundled dataset seeds it; operator changes are written in one
 * transaction with their outbox rows, then the next snapshot is made from the outbox entries
 * and swapped in before the write returns. Another process's change (the catalog CLI) is
 * picked up by `refresh()`, which the change feed calls.
 *
 * The next snapshot is built beside the serving one, a slice at a time, on a spare search
 * index (see CatalogSnapshot): the index the snapshot before served, which takes in the same
 * changes once that snapshot is retired. Taking in changes costs work in proportion to the
 * changes, not to the catalog, for the price of a second index in memory.
 */
export class EmbeddedStore implements CatalogStore {
  readonly kind = 'embedded';
  readonly searchEngine = 'minisearch';
  private snapshot: CatalogSnapshot;
  private readonly db: EmbeddedDatabase;
  private readonly statements;
  /** The rebuild waiting to start, which every change committed so far will be in. */
  private pending: Promise<void> | undefined;
  /** The rebuilds queued so far, run one at a time. */
  private building: Promise<void> = Promise.resolve();
  /** The spare search index, ready once it holds the serving snapshot's tools. */
  private spare: Promise<ToolIndex | undefined>;

  constructor(dataDir: string, bundled: readonly ToolRecord[]) {
    this.db = openEmbeddedDatabase(dataDir, CATALOG_DATABASE_FILE, CATALOG_MIGRATIONS);
    this.statements = {
      tool: this.db.prepare<[string], ToolRow>('SELECT record, deleted FROM tools WHERE slug = ?'),
      live: this.db.prepare<[], { record: string }>('SELECT record FROM tools WHERE deleted = 0'),
      put: this.db.prepare<[string, string, string]>(
        `INSERT INTO tools (slug, record, deleted, updated_at) VALUES (?, ?, 0, ?)
         ON CONFLICT (slug) DO UPDATE
         SET record = excluded.record, deleted = 0, updated_at = excluded.updated_at`,
      ),
      tombstone: this.db.prepare<[string, string]>(
        'UPDATE tools SET deleted = 1, updated_at = ? WHERE slug = ?',
      ),
      lastInstant: this.db.prepare<[], string | null>('SELECT max(updated_at) FROM tools').pluck(),
      record: this.db.prepare('INSERT INTO outbox (at, type, slug, payload) VALUES (?, ?, ?, ?)'),
      latest: this.db.prepare<[], number>('SELECT coalesce(max(version), 0) FROM outbox').pluck(),
      since: this.db.prepare<[number, number], OutboxRow>(
        'SELECT * FROM outbox WHERE version > ? ORDER BY version LIMIT ?',
      ),
      firstAfter: this.db
        .prepare<[number], string>(
          'SELECT at FROM outbox WHERE version > ? ORDER BY version LIMIT 1',
        )
        .pluck(),
      lastBefore: this.db
        .prepare<[string], number>('SELECT coalesce(max(version), 0) FROM outbox WHERE at < ?')
        .pluck(),
      prunedThrough: this.db
        .prepare<[], number>('SELECT through FROM outbox_pruned WHERE id = 1')
        .pluck(),
      markPruned: this.db.prepare<[number]>(
        'UPDATE outbox_pruned SET through = max(through, ?) WHERE id = 1',
      ),
      prune: this.db.prepare<[number]>('DELETE FROM outbox WHERE version <= ?'),
      recordHistory: this.db.prepare<[number, string, string, string, string]>(
        'INSERT INTO history (version, slug, at, type, changes) VALUES (?, ?, ?, ?, ?)',
      ),
      history: this.db.prepare<[string], Omit<HistoryEntry, 'changes'> & { changes: string }>(
        'SELECT version, slug, at, type, changes FROM history WHERE slug = ? ORDER BY version DESC',
      ),
    };
    this.upsertRows(bundled, true);
    // At start, before any request: built in one go.
    const { tools, version } = this.readAll();
    this.snapshot = CatalogSnapshot.build(tools, version);
    // Built in the background: the first change is then taken in as fast as any other.
    this.spare = spareWhenReady(this.snapshot.spareIndex());
  }

  get version(): number {
    return this.snapshot.version;
  }

  /** Every live tool and the version they are at, read in one transaction. */
  private readAll(): { tools: Tool[]; version: number } {
    return this.db.transaction(() => ({
      version: this.statements.latest.get() as number,
      tools: this.statements.live.all().map((row) => JSON.parse(row.record) as Tool),
    }))();
  }

  /**
   * Resolves once every change committed before the call is served, and the work the last
   * rebuild left to do in the background is done. Rebuilds run one at a time; calls made while
   * one waits to start share it.
   */
  private rebuild(): Promise<void> {
    this.pending ??= this.building.then(() => {
      // From here on, a change needs the next rebuild: this one may have read past it.
      this.pending = undefined;
      return this.catchUp();
    });
    this.building = this.pending.catch(() => undefined);
    return this.pending;
  }

  private async catchUp(): Promise<void> {
    // The last rebuild's work in the background ends first.
    const spare = await this.spare;
    const current = this.snapshot;
    if ((this.statements.latest.get() as number) === current.version) return;
    // Taken, so that a rebuild that fails midway leaves no half-changed index to the next.
    this.spare = Promise.resolve(undefined);
    const slices = new Slices();
    const read = await this.changesAfter(current.version, slices);
    if (!read) {
      // Entries missing from the outbox: the tools table says where things stand.
      const all = this.readAll();
      this.snapshot = await CatalogSnapshot.buildInSlices(all.tools, all.version);
      this.spare = spareWhenReady(this.snapshot.spareIndex());
      return;
    }
    this.snapshot = await current.withChanges(
      read.changes,
      read.version,
      spare ?? (await current.spareIndex()),
      slices,
    );
    // From the next turn: this one ends the slice that swapped the snapshots.
    this.spare = spareWhenReady(nextTurn().then(() => current.retire(read.changes)));
  }

  /**
   * Every change since `version`, as each changed tool's latest record (null if deleted), and
   * the version they bring the catalog to; undefined if the outbox misses entries. Read a page
   * at a time: the outbox is append only, so pages read apart still make one version.
   */
  private async changesAfter(
    version: number,
    slices: Slices,
  ): Promise<{ changes: Map<string, Tool | null>; version: number } | undefined> {
    const changes = new Map<string, Tool | null>();
    for (;;) {
      const entries = this.entriesSince(version, CATCH_UP_PAGE);
      if (entries.length === 0) return { changes, version };
      if (!follows(entries, version)) return undefined;
      for (const entry of entries) {
        changes.set(entry.slug, entry.type === 'tool.deleted' ? null : entry.tool);
      }
      version = entries.at(-1)!.version;
      if (slices.spent()) await slices.yield();
    }
  }

  async refresh(): Promise<number> {
    await this.rebuild();
    return this.snapshot.version;
  }

  /** Records a change in the outbox and the slug's history; `before`: the record it replaced. */
  private recordChange(change: ToolChange, at: string, before?: ToolRecord): void {
    const { type, slug, ...data } = change;
    const version = Number(
      this.statements.record.run(at, type, slug, JSON.stringify(data)).lastInsertRowid,
    );
    const changes = JSON.stringify(fieldChanges(change, before));
    this.statements.recordHistory.run(version, slug, at, type, changes);
  }

  /**
   * Runs `write` in one IMMEDIATE transaction, with the change clock where the store's last
   * change left it: read under the write lock, so no other process can commit in between.
   */
  private commit(write: (summary: ChangeSummary, clock: ChangeClock) => void): ChangeSummary {
    const summary = emptySummary();
    this.db
      .transaction(() => write(summary, new ChangeClock(this.statements.lastInstant.get() ?? null)))
      .immediate();
    return summary;
  }

  /** Stores a tool's content, changed at `at`; returns the record as served. */
  private put(record: ToolRecord, at: string): Tool {
    const tool = stamped(record, at);
    this.statements.put.run(tool.slug, JSON.stringify(tool), at);
    return tool;
  }

  /** Resolves once the committed write is served, with the version that serves it. */
  private async served(summary: ChangeSummary): Promise<ChangeSummary> {
    await this.rebuild();
    summary.version = this.snapshot.version;
    return summary;
  }

  private upsertRows(records: readonly ToolRecordInput[], onlyUnknown: boolean): ChangeSummary {
    return this.commit((summary, clock) => {
      for (const written of records) {
        const { slug } = written;
        const row = this.statements.tool.get(slug);
        if (row && onlyUnknown) continue;
        if (!row || row.deleted) {
          const tool = this.put(withProvenance(written, undefined, clock.time), clock.next());
          this.recordChange({ type: 'tool.created', slug, tool }, clock.time);
          summary.created.push(slug);
          continue;
        }
        const before = JSON.parse(row.record) as ToolRecord;
        const record = withProvenance(written, before, clock.time);
        const fields = changedFields(before, record);
        if (fields.length === 0) {
          summary.unchanged.push(slug);
          continue;
        }
        const tool = this.put(record, clock.next());
        const change = { type: 'tool.updated' as const, slug, tool, changedFields: fields };
        this.recordChange(change, clock.time, before);
        summary.updated.push({ slug, changedFields: fields });
      }
    });
  }

  async upsert(tools: readonly ToolRecordInput[]): Promise<ChangeSummary> {
    return this.served(this.upsertRows(tools, false));
  }

  async seed(tools: readonly ToolRecord[]): Promise<ChangeSummary> {
    return this.served(this.upsertRows(tools, true));
  }

  async delete(slug: string): Promise<ChangeSummary | null> {
    let found = false;
    const summary = this.commit((result, clock) => {
      const row = this.statements.tool.get(slug);
      if (!row || row.deleted) return;
      found = true;
      this.statements.tombstone.run(clock.next(), slug);
      const { name } = JSON.parse(row.record) as ToolRecord;
      this.recordChange({ type: 'tool.deleted', slug, name }, clock.time);
      result.deleted.push(slug);
    });
    return found ? this.served(summary) : null;
  }

  async changesSince(version: number, limit: number): Promise<OutboxEntry[]> {
    return this.entriesSince(version, limit);
  }

  private entriesSince(version: number, limit: number): OutboxEntry[] {
    return this.statements.since.all(version, limit).map(fromOutboxRow);
  }

  async changeLog({ after, keptFrom, limit }: ChangeLogQuery): Promise<ChangeLogPage> {
    const { statements } = this;
    // One read transaction: the page, the retention checks and the latest version agree.
    return this.db.transaction((): ChangeLogPage => {
      const latest = statements.latest.get() as number;
      const pruned = statements.prunedThrough.get() as number;
      let from: number;
      if (after === undefined) {
        from = Math.max(pruned, statements.lastBefore.get(keptFrom) as number);
      } else {
        const next = statements.firstAfter.get(after);
        if (after < pruned || after > latest || (next !== undefined && next < keptFrom)) {
          return { gone: true };
        }
        from = after;
      }
      return { gone: false, after: from, entries: this.entriesSince(from, limit), latest };
    })();
  }

  async pruneChanges(keptFrom: string): Promise<number> {
    return this.db
      .transaction(() => {
        const through = this.statements.lastBefore.get(keptFrom) as number;
        const latest = this.statements.latest.get() as number;
        // The newest entry stays: the outbox's last version is the catalog's.
        const until = Math.min(through, latest - 1);
        if (until <= 0) return 0;
        this.statements.markPruned.run(until);
        return this.statements.prune.run(until).changes;
      })
      .immediate();
  }

  async toolHistory(slug: string): Promise<HistoryEntry[] | null> {
    const rows = this.statements.history.all(slug);
    if (rows.length === 0) return this.statements.tool.get(slug) ? [] : null;
    return rows.map((row) => ({ ...row, changes: JSON.parse(row.changes) as FieldChanges }));
  }

  async listTools(query: ToolQuery): Promise<Page<Tool>> {
    return this.snapshot.listTools(query);
  }

  async getTool(slug: string): Promise<Tool | null> {
    return this.snapshot.getTool(slug);
  }

  async listCategories(): Promise<Category[]> {
    return this.snapshot.listCategories();
  }

  async search(request: SearchRequest): Promise<SearchPage> {
    return this.snapshot.search(request);
  }

  async *exportTools(): AsyncIterable<Tool> {
    // The snapshot of the moment the export began, whatever changes meanwhile.
    yield* this.snapshot.allByName();
  }

  async ping(): Promise<void> {
    this.statements.latest.get();
  }

  async close(): Promise<void> {
    // A rebuild under way reads the database until it ends.
    await this.building;
    await this.spare;
    this.db.close();
  }
}
