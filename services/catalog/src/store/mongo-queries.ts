import type {
  AnyBulkWriteOperation,
  CollationOptions,
  Document,
  Filter,
  IndexDescription,
  Sort,
  TransactionOptions,
  UpdateFilter,
} from 'mongodb';
import { formatInstant } from '../records/date-time';
import { UNVERIFIED_AT, withOlderProvenance, withProvenance } from '../records/provenance';
import { FullTool, type Tool, type ToolRecord, type ToolRecordInput } from '../schemas/tool';
import { categorySlug } from '../records/slug';
import type {
  ChangeSummary,
  OutboxEntry,
  PlannedChange,
  ToolChange,
  ToolQuery,
  ToolSort,
} from './catalog-store';
import { searchWords } from './query-semantics';
import { RANK_PROJECTION } from './search/atlas-search';
import type { SearchPlan } from './search/search-plan';
import type { Synonyms } from './search/synonyms';
import { changedFields } from './tool-diff';
import type { HistoryEntry } from './tool-history';

/**
 * The query documents the MongoDB adapter sends, built by pure functions so that unit tests
 * can check them without a server (test/catalog/store/mongo-queries.test.ts).
 */

/** A live tool as stored: the API record plus the derived category slug used for filtering. */
export type ToolDocument = Tool & { categorySlug: string; deleted: false };

/** What a deleted tool leaves in `tools`: its slug stays known, so a seed never brings it back. */
export interface TombstoneDocument {
  slug: string;
  name: string;
  deleted: true;
}

export type StoredDocument = ToolDocument | TombstoneDocument;

export const TOOLS_COLLECTION = 'tools';
export const OUTBOX_COLLECTION = 'catalog_outbox';
export const COUNTERS_COLLECTION = 'counters';

/** Same ordering as the embedded store: English, case-insensitive. */
export const NAME_COLLATION: CollationOptions = { locale: 'en', strength: 2 };

/** Relative weights of docs/api.md#response-bodies: name > tags and category > description. */
export const TEXT_WEIGHTS = { name: 10, tags: 5, category: 4, description: 1 } as const;

/**
 * A text index reads a field named `language` as a per-document language override; the
 * override is pointed at a field our documents never have, so no tool can break indexing.
 */
export const TOOL_INDEXES: IndexDescription[] = [
  { key: { slug: 1 }, name: 'slug_unique', unique: true },
  // Two live tools may not share a name in any case; a tombstone gives its name up. A partial
  // filter cannot say `$ne: true`, so every live tool carries `deleted: false`.
  {
    key: { name: 1 },
    name: 'name_unique',
    unique: true,
    collation: NAME_COLLATION,
    partialFilterExpression: { deleted: false },
  },
  { key: { categorySlug: 1, name: 1 }, name: 'category_name', collation: NAME_COLLATION },
  { key: { name: 1, slug: 1 }, name: 'name_slug', collation: NAME_COLLATION },
  // `updatedSince` and `sort=updatedAt`: canonical instants order as text, under the collation
  // every `/tools` query runs with too.
  { key: { updatedAt: 1, slug: 1 }, name: 'updated_slug', collation: NAME_COLLATION },
  // `verifiedBefore`, and `tool-directory catalog stale`: the same, for verifiedAt.
  { key: { verifiedAt: 1, slug: 1 }, name: 'verified_slug', collation: NAME_COLLATION },
  {
    key: { name: 'text', tags: 'text', category: 'text', description: 'text' },
    name: 'tool_text',
    weights: TEXT_WEIGHTS,
    default_language: 'english',
    language_override: 'textSearchLanguage',
  },
];

/**
 * What a tool document as the API's record is, until the seed stamps a tool stored before
 * `updatedAt` existed (`UNSTAMPED`): the earliest instant, so that it is never missing.
 */
export const UNSTAMPED_INSTANT = formatInstant(0);

/**
 * The fields of the API's record, and only those (`categorySlug` and `deleted` stay inside);
 * an absent field stays absent, but those every record carries: `updatedAt`, and the
 * provenance of a tool stored before it existed (records/provenance.ts: its website, and
 * UNVERIFIED_AT), until an import gives it its own.
 */
export const TOOL_PROJECTION: Document = {
  _id: 0,
  ...Object.fromEntries(Object.keys(FullTool.properties).map((field) => [field, 1])),
  updatedAt: { $ifNull: ['$updatedAt', UNSTAMPED_INSTANT] },
  source: { $ifNull: ['$source', '$website'] },
  verifiedAt: { $ifNull: ['$verifiedAt', UNVERIFIED_AT] },
};

/**
 * Narrows a filter to live tools. `$ne: true` rather than `false`: tools seeded before
 * tombstones existed have no `deleted` field until the next seed marks them.
 */
export function live(filter: Filter<StoredDocument> = {}): Filter<StoredDocument> {
  return { deleted: { $ne: true }, ...filter };
}

/** The seed's migration: marks tools stored before tombstones existed as live. */
export const MARK_LIVE = {
  filter: { deleted: { $exists: false } },
  update: { $set: { deleted: false } },
} as const;

/** User text inside a regular expression matches literally: no operator can be injected. */
export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

function containsIgnoringCase(word: string) {
  return { $regex: escapeRegex(word), $options: 'i' };
}

/**
 * `verifiedBefore`: verified strictly before the instant. A tool stored before provenance
 * existed has no `verifiedAt` and is served at UNVERIFIED_AT (TOOL_PROJECTION), so it is listed
 * whenever that is before the instant.
 */
function verifiedBeforeClause(before: string): Filter<StoredDocument> {
  const earlier = { verifiedAt: { $lt: before } };
  return UNVERIFIED_AT < before ? { $or: [earlier, { verifiedAt: null }] } : earlier;
}

/**
 * The filter of `/tools`: category by name or slug, every search word in name, description or
 * tags, changed after `updatedSince`, verified before `verifiedBefore` (canonical instants
 * compare as text).
 */
export function toolFilter({
  category,
  search,
  updatedSince,
  verifiedBefore,
}: Pick<
  ToolQuery,
  'category' | 'search' | 'updatedSince' | 'verifiedBefore'
>): Filter<StoredDocument> {
  const clauses: Filter<StoredDocument>[] = [];
  if (updatedSince !== undefined) clauses.push({ updatedAt: { $gt: updatedSince } });
  if (verifiedBefore !== undefined) clauses.push(verifiedBeforeClause(verifiedBefore));
  if (category !== undefined) {
    clauses.push({
      $or: [
        { categorySlug: category.toLowerCase() },
        { category: { $regex: `^${escapeRegex(category)}$`, $options: 'i' } },
      ],
    });
  }
  for (const word of search ? searchWords(search) : []) {
    const contains = containsIgnoringCase(word);
    clauses.push({ $or: [{ name: contains }, { description: contains }, { tags: contains }] });
  }
  if (clauses.length === 0) return live();
  return live(clauses.length === 1 ? clauses[0] : { $and: clauses });
}

/** Sort of `/tools`, every tie broken down to the unique slug so pages are stable. */
export function toolSort(sort: ToolSort): Sort {
  switch (sort) {
    case 'name':
      return { name: 1, slug: 1 };
    case '-name':
      return { name: -1, slug: -1 };
    case 'rating':
      return { rating: 1, name: 1, slug: 1 };
    case '-rating':
      return { rating: -1, name: 1, slug: 1 };
    case 'updatedAt':
      return { updatedAt: 1, slug: 1 };
    case '-updatedAt':
      return { updatedAt: -1, slug: -1 };
  }
}

/**
 * `$text` search (the MongoDB search path without Atlas Search): any of the query's words, its
 * neighbouring words run together ("open ai" -> "openai") and the words of its synonyms'
 * phrases ("tts" -> "text to speech"). Every term is letters and digits only, so none reads as
 * a `$text` negation or phrase. `rankHits` then ranks what it finds like every engine's hits.
 */
export function textSearchFilter(plan: SearchPlan, synonyms: Synonyms): Filter<StoredDocument> {
  const terms = new Set([...plan.words, ...plan.joins.map((join) => join.text)]);
  for (const { group } of plan.groups) {
    for (const phrase of synonyms.groups[group] ?? []) {
      for (const word of phrase.split(' ')) terms.add(word);
    }
  }
  return live({ $text: { $search: [...terms].join(' ') } });
}

export const TEXT_SCORE_PROJECTION = { ...RANK_PROJECTION, score: { $meta: 'textScore' } } as const;

/** A word as the start of a word in a field, any case. */
function startsWord(word: string) {
  return { $regex: `(^|[^a-z0-9])${escapeRegex(word)}`, $options: 'i' };
}

/** Letters as the start of a word in a name, with anything but letters between them. */
function startsNameAnySpacing(letters: string) {
  const spaced = [...letters].map(escapeRegex).join('[^a-z0-9]*');
  return { $regex: `(^|[^a-z0-9])${spaced}`, $options: 'i' };
}

/**
 * What `$text` cannot find: it matches whole stemmed words only, so "lang" or "ai" would find
 * nothing, nor "huggingface" Hugging Face. This finds words that *start* with each query word in
 * the name, tags or category, and names that start with a word or joined words whatever the
 * spacing.
 */
export function prefixFallbackFilter(plan: SearchPlan): Filter<StoredDocument> {
  const clauses: Filter<StoredDocument>[] = plan.words.flatMap((word) => [
    { name: startsWord(word) },
    { tags: startsWord(word) },
    { category: startsWord(word) },
  ]);
  const joined = [...plan.words, ...plan.joins.map((join) => join.text)].filter(
    (letters) => letters.length >= 4,
  );
  for (const letters of joined) clauses.push({ name: startsNameAnySpacing(letters) });
  return live({ $or: clauses });
}

/** The full records of the page's hits. */
export function pageFilter(slugs: readonly string[]): Filter<StoredDocument> {
  return live({ slug: { $in: [...slugs] } });
}

/** Categories with their counts, grouped by the server. */
export const CATEGORY_PIPELINE: Document[] = [
  { $match: live() },
  { $group: { _id: '$category', toolCount: { $sum: 1 } } },
  { $project: { _id: 0, name: '$_id', toolCount: 1 } },
];

/** The stored form of a live tool. */
export function toDocument(tool: Tool): ToolDocument {
  return { ...tool, categorySlug: categorySlug(tool.category), deleted: false };
}

/**
 * Transactions of the write path: committed to a majority, so that a change the outbox
 * announces survives a failover.
 */
export const TRANSACTION_OPTIONS: TransactionOptions = { writeConcern: { w: 'majority' } };

/**
 * The writes of an upsert or a delete, in order (a slug written twice ends as the last
 * write): a tool replaces its document or a tombstone; a deleted tool becomes a tombstone.
 * The changes carry their instants (stampChange) already.
 */
export function writeOperations(
  changes: readonly ToolChange[],
): AnyBulkWriteOperation<StoredDocument>[] {
  return changes.map((change) => ({
    replaceOne: {
      filter: { slug: change.slug },
      replacement:
        change.type === 'tool.deleted'
          ? { slug: change.slug, name: change.name, deleted: true }
          : toDocument(change.tool),
      upsert: true,
    },
  }));
}

/** The slugs the seed looks for: any document holding one, live or tombstone, keeps it out. */
export function knownSlugsFilter(tools: readonly ToolRecord[]): Filter<StoredDocument> {
  return { slug: { $in: tools.map((tool) => tool.slug) } };
}

/** The seed's changes: the bundled tools whose slug no document holds, in bundle order. */
export function planSeed(tools: readonly ToolRecord[], known: ReadonlySet<string>): PlannedWrites {
  const changes: PlannedChange[] = tools
    .filter((tool) => !known.has(tool.slug))
    .map((tool) => ({ type: 'tool.created', slug: tool.slug, tool }));
  return { changes, unchanged: [] };
}

/**
 * The seed's writes: a tool is inserted only if no document holds its slug, live or
 * tombstone, so it never undoes an operator's edit or brings back a deleted tool.
 */
export function seedOperations(tools: readonly Tool[]): AnyBulkWriteOperation<StoredDocument>[] {
  return tools.map((tool) => ({
    updateOne: {
      filter: { slug: tool.slug },
      update: { $setOnInsert: toDocument(tool) },
      upsert: true,
    },
  }));
}

/** What a write will do to `tools`, before its versions and instants are handed out. */
export interface PlannedWrites {
  changes: PlannedChange[];
  unchanged: string[];
  /** The live records the changes replace, by slug: the `from` of their history. */
  before?: ReadonlyMap<string, ToolRecord>;
}

/**
 * What an upsert changes, given the live tools it replaces: the embedded store's rules. Each
 * record gets its provenance (records/provenance.ts) from the one it replaces, or from `at`,
 * the time of the write, first.
 */
export function planUpsert(
  current: ReadonlyMap<string, ToolRecord>,
  tools: readonly ToolRecordInput[],
  at: string = formatInstant(Date.now()),
): PlannedWrites {
  const latest = new Map(current);
  const changes: PlannedChange[] = [];
  const unchanged: string[] = [];
  for (const written of tools) {
    const before = latest.get(written.slug);
    const tool = withProvenance(written, before, at);
    latest.set(tool.slug, tool);
    if (!before) {
      changes.push({ type: 'tool.created', slug: tool.slug, tool });
      continue;
    }
    const fields = changedFields(before, tool);
    if (fields.length === 0) unchanged.push(tool.slug);
    else changes.push({ type: 'tool.updated', slug: tool.slug, tool, changedFields: fields });
  }
  return { changes, unchanged };
}

/** The single document holding the last catalog version and the last instant handed out. */
export interface CounterDocument {
  _id: string;
  value: number;
  /** The change clock: the last change's instant (absent before the first). */
  clock?: Date;
}

export const VERSION_COUNTER: Filter<CounterDocument> = { _id: 'catalog_version' };

/**
 * Hands out `versions` catalog versions and `instants` change instants (at least one) in one
 * step, computed by the server: the counter's value ends at the last version, its clock at the
 * last instant. The first instant is the server's time (`$$NOW`, the primary's clock) or a
 * millisecond after the last instant handed out, whichever is later; the others follow a
 * millisecond apart. Concurrent transactions conflict on this one document, so a write that
 * commits later has later versions and later instants (store/change-clock.ts says why that
 * matters), whichever primary's clock it read.
 */
export function claimUpdate(versions: number, instants: number): Document[] {
  return [
    {
      $set: {
        value: { $add: [{ $ifNull: ['$value', 0] }, versions] },
        clock: {
          $max: [
            { $add: ['$$NOW', instants - 1] },
            { $add: [{ $ifNull: ['$clock', new Date(0)] }, instants] },
          ],
        },
      },
    },
  ];
}

/** The `count` instants a claim handed out, oldest first: the counter's clock is the last. */
export function claimedInstants(counter: CounterDocument, count: number): string[] {
  const last = counter.clock!.getTime();
  return Array.from({ length: count }, (_, i) => formatInstant(last - count + 1 + i));
}

/** Live tools stored before `updatedAt` existed: the seed stamps them. */
export const UNSTAMPED = live({ updatedAt: { $exists: false } });

/** Gives each unstamped tool its instant (by slug), unless another writer stamped it since. */
export function stampOperations(
  slugs: readonly string[],
  instants: readonly string[],
): AnyBulkWriteOperation<StoredDocument>[] {
  return slugs.map((slug, i) => ({
    updateOne: {
      filter: { slug, updatedAt: { $exists: false } },
      update: { $set: { updatedAt: instants[i]! } },
    },
  }));
}

/** An outbox entry as stored: the change's own data under `payload`. */
export interface OutboxDocument {
  version: number;
  at: string;
  type: ToolChange['type'];
  slug: string;
  payload: Document;
}

export const OUTBOX_INDEXES: IndexDescription[] = [
  { key: { version: 1 }, name: 'version_unique', unique: true },
  // Retention: the outbox is pruned, and the change log starts, by the time of the write.
  { key: { at: 1 }, name: 'at' },
];

/** Each change's field-level changes, kept as long as the slug (tool-history.ts). */
export const HISTORY_COLLECTION = 'tool_history';

export type HistoryDocument = HistoryEntry;

export const HISTORY_INDEXES: IndexDescription[] = [
  { key: { version: 1 }, name: 'version_unique', unique: true },
  { key: { slug: 1, version: -1 }, name: 'slug_newest_first' },
];

export function historyFilter(slug: string): Filter<HistoryDocument> {
  return { slug };
}

export const NEWEST_FIRST: Sort = { version: -1 };

/** The last outbox version pruned: a change-log reader behind it has missed changes. */
export const PRUNED_COUNTER: Filter<CounterDocument> = { _id: 'outbox_pruned' };

export function prunedUpdate(through: number): UpdateFilter<CounterDocument> {
  return { $max: { value: through } };
}

/** Outbox entries written before `keptFrom` (past retention). */
export function writtenBefore(keptFrom: string): Filter<OutboxDocument> {
  return { at: { $lt: keptFrom } };
}

export function prunedFilter(through: number): Filter<OutboxDocument> {
  return { version: { $lte: through } };
}

/** One outbox entry per change, numbered consecutively up to `lastVersion`. */
export function outboxDocuments(
  changes: readonly ToolChange[],
  lastVersion: number,
  at: string,
): OutboxDocument[] {
  const first = lastVersion - changes.length + 1;
  return changes.map(({ type, slug, ...payload }, index) => ({
    version: first + index,
    at,
    type,
    slug,
    payload,
  }));
}

export function changesSinceFilter(version: number): Filter<OutboxDocument> {
  return { version: { $gt: version } };
}

export const OUTBOX_ORDER: Sort = { version: 1 };

export function fromOutboxDocument({
  version,
  at,
  type,
  slug,
  payload,
}: OutboxDocument): OutboxEntry {
  const entry = { version, at, type, slug, ...payload } as OutboxEntry;
  // An entry written before provenance existed: its tool as the tools are served.
  return entry.type === 'tool.deleted'
    ? entry
    : { ...entry, tool: withOlderProvenance(entry.tool) };
}

/** The summary of a committed write (`version`: the catalog version after it). */
export function summarize(
  changes: readonly PlannedChange[],
  unchanged: readonly string[],
  version: number,
): ChangeSummary {
  const summary: ChangeSummary = {
    created: [],
    updated: [],
    unchanged: [...unchanged],
    deleted: [],
    version,
  };
  for (const change of changes) {
    if (change.type === 'tool.created') summary.created.push(change.slug);
    else if (change.type === 'tool.updated')
      summary.updated.push({ slug: change.slug, changedFields: change.changedFields });
    else summary.deleted.push(change.slug);
  }
  return summary;
}

/** Live tools named like any of `tools` (with NAME_COLLATION: in any case). */
export function sameNameFilter(tools: readonly ToolRecord[]): Filter<StoredDocument> {
  return live({ name: { $in: tools.map((tool) => tool.name) } });
}

/** A write refused by `name_unique`: it would give two live tools the same name. */
export function isDuplicateName(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error as { code?: unknown }).code === 11000 &&
    /\bindex: name_unique\b/.test(error.message)
  );
}
