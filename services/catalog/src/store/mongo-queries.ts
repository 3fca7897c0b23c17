import type {
  AnyBulkWriteOperation,
  CollationOptions,
  Document,
  Filter,
  IndexDescription,
  Sort,
  TransactionOptions,
} from 'mongodb';
import type { Tool } from '../schemas/tool';
import { categorySlug } from '../slug';
import type { ChangeSummary, OutboxEntry, ToolChange, ToolQuery, ToolSort } from './catalog-store';
import { searchWords } from './query-semantics';
import { RANK_PROJECTION } from './search/atlas-search';
import type { SearchPlan } from './search/search-plan';
import type { Synonyms } from './search/synonyms';
import { changedFields } from './tool-diff';

/**
 * The query documents the MongoDB adapter sends, built by pure functions so that unit tests
 * can check them without a server (test/catalog/mongo-queries.test.ts).
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

/** Relative weights of SPEC B6: name > tags and category > description. */
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
  {
    key: { name: 'text', tags: 'text', category: 'text', description: 'text' },
    name: 'tool_text',
    weights: TEXT_WEIGHTS,
    default_language: 'english',
    language_override: 'textSearchLanguage',
  },
];

/** Fields the API never shows. */
export const TOOL_PROJECTION = { _id: 0, categorySlug: 0, deleted: 0 } as const;

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

/** The filter of `/tools`: category by name or slug, every search word in name, description or tags. */
export function toolFilter({
  category,
  search,
}: Pick<ToolQuery, 'category' | 'search'>): Filter<StoredDocument> {
  const clauses: Filter<StoredDocument>[] = [];
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

/** The changes of a seed: the tools whose operations inserted (bulkWrite's `upsertedIds`). */
export function seededChanges(
  tools: readonly Tool[],
  upsertedIds: Partial<Record<number, unknown>>,
): ToolChange[] {
  return Object.keys(upsertedIds)
    .map(Number)
    .sort((a, b) => a - b)
    .map((index) => {
      const tool = tools[index]!;
      return { type: 'tool.created', slug: tool.slug, tool };
    });
}

/** What a write did to `tools`, before its versions are handed out. */
export interface ToolWrites {
  changes: ToolChange[];
  unchanged: string[];
}

/** What an upsert changes, given the live tools it replaces: the embedded store's rules. */
export function planUpsert(current: ReadonlyMap<string, Tool>, tools: readonly Tool[]): ToolWrites {
  const latest = new Map(current);
  const changes: ToolChange[] = [];
  const unchanged: string[] = [];
  for (const tool of tools) {
    const before = latest.get(tool.slug);
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

/** The single document holding the last catalog version handed out. */
export interface CounterDocument {
  _id: string;
  value: number;
}

export const VERSION_COUNTER: Filter<CounterDocument> = { _id: 'catalog_version' };

/**
 * Hands out `count` versions in one step: the counter ends at the last of them. Concurrent
 * transactions conflict on this one document, so versions commit in the order handed out.
 */
export function versionIncrement(count: number) {
  return { $inc: { value: count } };
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
];

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
  return { version, at, type, slug, ...payload } as OutboxEntry;
}

/** The summary of a committed write (`version`: the catalog version after it). */
export function summarize(
  changes: readonly ToolChange[],
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
export function sameNameFilter(tools: readonly Tool[]): Filter<StoredDocument> {
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
