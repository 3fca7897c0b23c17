import {
  type EmbeddedDatabase,
  openEmbeddedDatabase,
} from '../../../shared/embedded/embedded-database';
import type { Category, SearchHit, Tool } from '../schemas/tool';
import type {
  CatalogStore,
  ChangeSummary,
  OutboxEntry,
  Page,
  ToolChange,
  ToolQuery,
} from './catalog-store';
import { CatalogSnapshot } from './catalog-snapshot';
import { changedFields } from './tool-diff';

export const CATALOG_DATABASE_FILE = 'catalog.db';

const MIGRATIONS = [
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
];

interface ToolRow {
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

/**
 * The embedded store: the catalog in `DATA_DIR/catalog.db` (SQLite), served from an immutable
 * in-memory snapshot. The bundled dataset seeds it; operator changes are written in one
 * transaction with their outbox rows, then a new snapshot is built and swapped in. Another
 * process's change (the catalog CLI) is picked up by `refresh()`, which the change feed calls.
 */
export class EmbeddedStore implements CatalogStore {
  readonly kind = 'embedded';
  private snapshot: CatalogSnapshot;
  private readonly db: EmbeddedDatabase;
  private readonly statements;

  constructor(dataDir: string, bundled: readonly Tool[]) {
    this.db = openEmbeddedDatabase(dataDir, CATALOG_DATABASE_FILE, MIGRATIONS);
    this.statements = {
      tool: this.db.prepare<[string], ToolRow>('SELECT record, deleted FROM tools WHERE slug = ?'),
      live: this.db.prepare<[], { record: string }>('SELECT record FROM tools WHERE deleted = 0'),
      put: this.db.prepare(
        `INSERT INTO tools (slug, record, deleted) VALUES (?, ?, 0)
         ON CONFLICT (slug) DO UPDATE SET record = excluded.record, deleted = 0`,
      ),
      tombstone: this.db.prepare('UPDATE tools SET deleted = 1 WHERE slug = ?'),
      record: this.db.prepare('INSERT INTO outbox (at, type, slug, payload) VALUES (?, ?, ?, ?)'),
      latest: this.db.prepare<[], number>('SELECT coalesce(max(version), 0) FROM outbox').pluck(),
      since: this.db.prepare<[number, number], OutboxRow>(
        'SELECT * FROM outbox WHERE version > ? ORDER BY version LIMIT ?',
      ),
    };
    this.snapshot = new CatalogSnapshot([], 0);
    this.seedNow(bundled);
    this.rebuild();
  }

  get version(): number {
    return this.snapshot.version;
  }

  private rebuild(): void {
    const version = this.statements.latest.get() as number;
    const tools = this.statements.live.all().map((row) => JSON.parse(row.record) as Tool);
    this.snapshot = new CatalogSnapshot(tools, version);
  }

  async refresh(): Promise<number> {
    if ((this.statements.latest.get() as number) !== this.snapshot.version) this.rebuild();
    return this.snapshot.version;
  }

  private recordChange(change: ToolChange, at: string): number {
    const { type, slug, ...data } = change;
    return Number(this.statements.record.run(at, type, slug, JSON.stringify(data)).lastInsertRowid);
  }

  /** Runs `write` in one IMMEDIATE transaction, then serves its result at once. */
  private write(write: (summary: ChangeSummary, at: string) => void): ChangeSummary {
    const summary = emptySummary();
    this.db.transaction(() => write(summary, new Date().toISOString())).immediate();
    this.rebuild();
    summary.version = this.snapshot.version;
    return summary;
  }

  private upsertNow(tools: readonly Tool[], onlyUnknown: boolean): ChangeSummary {
    return this.write((summary, at) => {
      for (const tool of tools) {
        const row = this.statements.tool.get(tool.slug);
        if (row && onlyUnknown) continue;
        if (!row || row.deleted) {
          this.statements.put.run(tool.slug, JSON.stringify(tool));
          this.recordChange({ type: 'tool.created', slug: tool.slug, tool }, at);
          summary.created.push(tool.slug);
          continue;
        }
        const fields = changedFields(JSON.parse(row.record) as Tool, tool);
        if (fields.length === 0) {
          summary.unchanged.push(tool.slug);
          continue;
        }
        this.statements.put.run(tool.slug, JSON.stringify(tool));
        this.recordChange(
          { type: 'tool.updated', slug: tool.slug, tool, changedFields: fields },
          at,
        );
        summary.updated.push({ slug: tool.slug, changedFields: fields });
      }
    });
  }

  private seedNow(tools: readonly Tool[]): ChangeSummary {
    return this.upsertNow(tools, true);
  }

  async upsert(tools: readonly Tool[]): Promise<ChangeSummary> {
    return this.upsertNow(tools, false);
  }

  async seed(tools: readonly Tool[]): Promise<ChangeSummary> {
    return this.seedNow(tools);
  }

  async delete(slug: string): Promise<ChangeSummary | null> {
    let found = false;
    const summary = this.write((result, at) => {
      const row = this.statements.tool.get(slug);
      if (!row || row.deleted) return;
      found = true;
      this.statements.tombstone.run(slug);
      const { name } = JSON.parse(row.record) as Tool;
      this.recordChange({ type: 'tool.deleted', slug, name }, at);
      result.deleted.push(slug);
    });
    return found ? summary : null;
  }

  async changesSince(version: number, limit: number): Promise<OutboxEntry[]> {
    return this.statements.since.all(version, limit).map(
      (row) =>
        ({
          version: row.version,
          at: row.at,
          type: row.type,
          slug: row.slug,
          ...JSON.parse(row.payload),
        }) as OutboxEntry,
    );
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

  async search(text: string, limit: number): Promise<Page<SearchHit>> {
    return this.snapshot.search(text, limit);
  }

  async *exportTools(): AsyncIterable<Tool> {
    // The snapshot of the moment the export began, whatever changes meanwhile.
    yield* this.snapshot.allByName();
  }

  async ping(): Promise<void> {
    this.statements.latest.get();
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
