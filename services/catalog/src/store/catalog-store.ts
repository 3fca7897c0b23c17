import type { Category, SearchHit, Tool, ToolRecord, ToolRecordInput } from '../schemas/tool';
import type { CategoryFacet, ToolSort } from '../schemas/api';
import type { HistoryEntry } from './tool-history';

export type { ToolSort };

export interface ToolQuery {
  page: number;
  limit: number;
  /** A category's name or slug, any case. */
  category?: string;
  /** Words that must all occur in name, description or tags, any case. */
  search?: string;
  /** Only tools changed after this instant (canonical form, see date-time.ts). */
  updatedSince?: string;
  /** Only tools whose `verifiedAt` is before this instant (canonical form). */
  verifiedBefore?: string;
  sort: ToolSort;
}

export interface Page<T> {
  items: T[];
  total: number;
}

/** `/search` (docs/api.md#response-bodies, docs/api.md#search). */
export interface SearchRequest {
  text: string;
  limit: number;
  /** A category's name or slug, any case: only its matches are returned and counted. */
  category?: string | undefined;
}

/** Best match first; `total` counts every match in the category asked for. */
export interface SearchPage extends Page<SearchHit> {
  /** Every match's category, before the category filter, most matches first. */
  facets: { category: CategoryFacet[] };
}

/**
 * What finds the hits of `/search`: MiniSearch in the embedded store; on MongoDB, Atlas Search
 * (`$search`) when the search index is there, else the `$text` index (docs/api.md, "Search").
 */
export type SearchEngine = 'minisearch' | 'atlas' | 'text';

/**
 * One change to the catalog, as recorded in the outbox (docs/api.md#catalog-changes-and-freshness,
 * docs/api.md#webhook-events-and-deliveries): its tool carries the change's instant as `updatedAt`.
 * `changedFields` names the fields of the record's content that changed, never `updatedAt`, which
 * every change moves.
 */
export type ToolChange<T extends ToolRecord = Tool> =
  | { type: 'tool.created'; slug: string; tool: T }
  | { type: 'tool.updated'; slug: string; tool: T; changedFields: string[] }
  | { type: 'tool.deleted'; slug: string; name: string };

/** A change before the change clock gave it its instant (store/change-clock.ts). */
export type PlannedChange = ToolChange<ToolRecord>;

/**
 * An outbox entry: a change with its catalog version (monotonically increasing) and the time of
 * its write (the wall clock's; a created or updated tool's `updatedAt` is its change-clock
 * instant, the same for a write of one change).
 */
export type OutboxEntry = ToolChange & { version: number; at: string };

/** A page of the change log (docs/api.md#staying-in-sync). */
export interface ChangeLogQuery {
  /** The catalog version the reader has seen; undefined: from the oldest change kept. */
  after?: number;
  /** Changes written before this instant are past retention (CHANGES_RETENTION_DAYS). */
  keptFrom: string;
  limit: number;
}

/**
 * `gone`: changes after the version asked for are past retention (or it is a version this
 * catalog never reached), so the reader must resynchronise. Otherwise the entries after
 * `after`, oldest first, and the version the page follows.
 */
export type ChangeLogPage =
  { gone: true } | { gone: false; after: number; entries: OutboxEntry[]; latest: number };

/** What a write did, slug by slug. An upsert that changes nothing records nothing. */
export interface ChangeSummary {
  created: string[];
  updated: { slug: string; changedFields: string[] }[];
  unchanged: string[];
  deleted: string[];
  /** The catalog version after the write. */
  version: number;
}

/**
 * The write half of the storage contract. Records arrive validated (records/tool-validator.ts);
 * each write is atomic (all of it or nothing) and records its changes in the outbox, in the same
 * transaction where the store allows, before anyone is told. Each change gets its instant from
 * the store's change clock (store/change-clock.ts) inside that transaction; a record's own
 * `updatedAt`, if it has one, is ignored.
 */
export interface CatalogWriter {
  /**
   * Creates or replaces tools by slug; an unchanged record is reported, not written. A record
   * without `source` or `verifiedAt` gets them from the one it replaces, or defaults
   * (records/provenance.ts).
   */
  upsert(tools: readonly ToolRecordInput[]): Promise<ChangeSummary>;
  /** Deletes by slug, keeping a tombstone so that a later seed does not bring it back. */
  delete(slug: string): Promise<ChangeSummary | null>;
  /**
   * Adds bundled tools whose slug the store has never held (an upgrade's new tools); never
   * touches a tool an operator changed or deleted.
   */
  seed(tools: readonly ToolRecord[]): Promise<ChangeSummary>;
  /** Outbox entries after `version`, oldest first, at most `limit`. */
  changesSince(version: number, limit: number): Promise<OutboxEntry[]>;
  /**
   * Removes the outbox entries written before `keptFrom`, except the newest, and remembers the
   * last version removed: a reader behind it has missed changes. Returns how many it removed.
   */
  pruneChanges(keptFrom: string): Promise<number>;
}

/**
 * The read half of the storage contract (docs/architecture.md). The embedded store and the
 * MongoDB store both honour both halves; test/catalog/routes/catalog-contract.ts holds them to it.
 */
export interface CatalogReader {
  readonly kind: 'embedded' | 'mongodb';
  /** The catalog version this process serves: the outbox's latest entry it has seen. */
  readonly version: number;
  /**
   * Catches up with the store's latest version (another process or replica wrote) and
   * returns it. Cheap when nothing changed.
   */
  refresh(): Promise<number>;
  listTools(query: ToolQuery): Promise<Page<Tool>>;
  getTool(slug: string): Promise<Tool | null>;
  listCategories(): Promise<Category[]>;
  /** The change log clients sync from: the outbox within retention. */
  changeLog(query: ChangeLogQuery): Promise<ChangeLogPage>;
  /** A slug's history, newest first; null if the catalog never held it. */
  toolHistory(slug: string): Promise<HistoryEntry[] | null>;
  /** The engine `search` uses now. */
  readonly searchEngine: SearchEngine;
  /** Full-text search, best match first; `total` counts every match, `items` at most `limit`. */
  search(request: SearchRequest): Promise<SearchPage>;
  /**
   * Every tool with all its data, ordered by name then slug: the bulk export
   * (docs/api.md#enterprise-export-and-webhooks).
   */
  exportTools(): AsyncIterable<Tool>;
  /** Resolves when the backing store answers. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface CatalogStore extends CatalogReader, CatalogWriter {}
