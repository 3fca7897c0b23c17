import type { CollationOptions, Document, Filter, IndexDescription, Sort } from 'mongodb';
import type { Tool } from '../schemas/tool';
import { categorySlug } from '../slug';
import type { ToolQuery, ToolSort } from './catalog-store';
import { queryPhrases, searchWords, tagPhrase } from './query-semantics';

/**
 * The query documents the MongoDB adapter sends, built by pure functions so that unit tests
 * can check them without a server (test/catalog/mongo-queries.test.ts).
 */

/** A tool as stored: the API record plus the derived category slug used for filtering. */
export type ToolDocument = Tool & { categorySlug: string };

export const TOOLS_COLLECTION = 'tools';

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
export const TOOL_PROJECTION = { _id: 0, categorySlug: 0 } as const;

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
}: Pick<ToolQuery, 'category' | 'search'>): Filter<ToolDocument> {
  const clauses: Filter<ToolDocument>[] = [];
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
  if (clauses.length === 0) return {};
  return clauses.length === 1 ? (clauses[0] as Filter<ToolDocument>) : { $and: clauses };
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

/** `$text` search, with the text score as `score`. */
export function textSearchFilter(text: string): Filter<ToolDocument> {
  return { $text: { $search: text } };
}

export const TEXT_SCORE_PROJECTION = { ...TOOL_PROJECTION, score: { $meta: 'textScore' } } as const;
export const TEXT_SCORE_SORT: Sort = { score: { $meta: 'textScore' } };

/**
 * `$text` matches whole stemmed words only, so "lang" or "ai" would find nothing; this filter
 * finds words that *start* with each query word in the name, tags or category.
 */
export function prefixFallbackFilter(text: string): Filter<ToolDocument> {
  const clauses = searchWords(text).flatMap((word) => {
    const startsWord = { $regex: `(^|[^a-z0-9])${escapeRegex(word)}`, $options: 'i' };
    return [{ name: startsWord }, { tags: startsWord }, { category: startsWord }];
  });
  return { $or: clauses };
}

/**
 * Score of a fallback hit, on the same weights as the text index: each query word that starts
 * a word of a field adds that field's weight, and a run of query words that spells a whole tag
 * ("text to speech") adds twice the tag weight, so word order counts as in the embedded store.
 */
export function prefixScore(tool: Tool, text: string): number {
  const starts = (value: string, word: string) =>
    new RegExp(`(^|[^a-z0-9])${escapeRegex(word)}`, 'i').test(value);
  let score = 0;
  const phrases = new Set(queryPhrases(text));
  for (const tag of tool.tags) if (phrases.has(tagPhrase(tag))) score += TEXT_WEIGHTS.tags * 2;
  for (const word of searchWords(text)) {
    if (starts(tool.name, word)) score += TEXT_WEIGHTS.name;
    if (tool.tags.some((tag) => starts(tag, word))) score += TEXT_WEIGHTS.tags;
    if (starts(tool.category, word)) score += TEXT_WEIGHTS.category;
  }
  return score / 2;
}

/** Categories with their counts, grouped by the server. */
export const CATEGORY_PIPELINE: Document[] = [
  { $group: { _id: '$category', toolCount: { $sum: 1 } } },
  { $project: { _id: 0, name: '$_id', toolCount: 1 } },
];

/** The stored form of a tool. */
export function toDocument(tool: Tool): ToolDocument {
  return { ...tool, categorySlug: categorySlug(tool.category) };
}

/** Upserts by slug: seeding the same dataset twice changes nothing. */
export function upsertOperations(tools: readonly Tool[]) {
  return tools.map((tool) => ({
    replaceOne: { filter: { slug: tool.slug }, replacement: toDocument(tool), upsert: true },
  }));
}
