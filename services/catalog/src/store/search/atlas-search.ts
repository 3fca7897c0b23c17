import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { AnyBulkWriteOperation, Document } from 'mongodb';
import { DATASET_DIR } from '../../records/dataset';
import { categorySlug } from '../../records/slug';
import type { SearchPlan } from './search-plan';
import type { Synonyms } from './synonyms';
import { maxEdits } from './text';

/**
 * Atlas Search (`$search`, `$searchMeta`) for the MongoDB store, "Atlas-style"
 * (docs/api.md#search): the search index definition lives in `data/atlas-search-index.json`; these
 * pure functions build the documents sent with it, unit-tested without a server
 * (test/catalog/store/search/mongo-search.test.ts).
 */

export const SEARCH_INDEX_NAME = 'tool_search';
/** The collection the index's synonym mapping reads (`data/synonyms.json`, as Atlas wants it). */
export const SYNONYMS_COLLECTION = 'search_synonyms';
export const SYNONYM_MAPPING = 'tool_synonyms';
const SEARCH_INDEX_FILE = 'atlas-search-index.json';

/** Hits ranked by `rankHits` per query; the rest are counted by `$searchMeta`, never fetched. */
export const ATLAS_CANDIDATES = 100;

/** The search index definition, as kept in the repository. */
export function searchIndexDefinition(dir: string = DATASET_DIR): Document {
  return JSON.parse(readFileSync(path.join(dir, SEARCH_INDEX_FILE), 'utf8')) as Document;
}

/** The synonym source documents: each group as one set of equivalent phrases. */
export function synonymDocuments(synonyms: Synonyms): Document[] {
  return synonyms.groups.map((group, index) => ({
    _id: `group-${index}`,
    mappingType: 'equivalent',
    synonyms: [...group],
  }));
}

/**
 * Writes that make the synonyms collection hold exactly these documents, never empty on the
 * way: Atlas reads it again on every change, and searches go on meanwhile.
 */
export function synonymWrites(synonyms: Synonyms): AnyBulkWriteOperation<Document>[] {
  const documents = synonymDocuments(synonyms);
  return [
    ...documents.map((replacement) => ({
      replaceOne: { filter: { _id: replacement._id }, replacement, upsert: true },
    })),
    { deleteMany: { filter: { _id: { $nin: documents.map((d) => d._id) } } } },
  ];
}

/**
 * Whether a definition Atlas reports (which may add its defaults) says what `wanted` says:
 * every value of `wanted` is there, equal, at the same place.
 */
export function definitionHolds(reported: unknown, wanted: unknown): boolean {
  if (Array.isArray(wanted)) {
    return (
      Array.isArray(reported) &&
      reported.length === wanted.length &&
      wanted.every((item, i) => definitionHolds(reported[i], item))
    );
  }
  if (wanted !== null && typeof wanted === 'object') {
    return (
      reported !== null &&
      typeof reported === 'object' &&
      Object.entries(wanted).every(([key, value]) =>
        definitionHolds((reported as Record<string, unknown>)[key], value),
      )
    );
  }
  return reported === wanted;
}

/**
 * The same weights as the `$text` index (docs/api.md#response-bodies: name > tags > category >
 * description).
 */
const FIELD_BOOST = { name: 10, tags: 5, category: 4, description: 1 } as const;
const TEXT_PATHS = Object.keys(FIELD_BOOST);

const boost = (value: number) => ({ boost: { value } });

/**
 * The clauses any of which makes a hit (compound `should`), each weighted so that Atlas's
 * score picks the right candidates for `rankHits` to order:
 * - the whole query equal to the name, both run together (`compact`: "open ai" is OpenAI);
 * - the query run together as the start of a name run together ("huggingface");
 * - word prefixes in the name (`autocomplete`);
 * - the words in each field, with the synonym mapping (`tts` finds "text to speech");
 * - each word of 5 letters or more with its typos (Damerau-Levenshtein: 1 edit up to 8
 *   letters, 2 from 9);
 * - the words as a phrase, in order ("text to speech" is not "speech to text").
 */
export function searchClauses(text: string, plan: SearchPlan): Document[] {
  const clauses: Document[] = [
    { text: { query: text, path: { value: 'name', multi: 'compact' }, score: boost(100) } },
  ];
  if (plan.exactName.length >= 3) {
    clauses.push({
      wildcard: {
        // A compact query holds letters and digits only: nothing for wildcard syntax to read.
        query: `${plan.exactName}*`,
        path: { value: 'name', multi: 'compact' },
        allowAnalyzedField: true,
        score: boost(8),
      },
    });
  }
  clauses.push({ autocomplete: { query: text, path: 'name', score: boost(6) } });
  for (const [field, weight] of Object.entries(FIELD_BOOST)) {
    clauses.push({
      text: {
        query: text,
        path: field,
        synonyms: SYNONYM_MAPPING,
        matchCriteria: 'any',
        score: boost(weight),
      },
    });
  }
  for (const word of plan.words) {
    const edits = maxEdits(word);
    if (edits === 0) continue;
    clauses.push({
      text: {
        query: word,
        path: TEXT_PATHS,
        fuzzy: { maxEdits: edits, prefixLength: 0, maxExpansions: 50 },
        score: boost(0.5),
      },
    });
  }
  if (text.trim().includes(' ')) {
    clauses.push({
      phrase: { query: text, path: ['tags', 'category', 'description'], score: boost(3) },
    });
  }
  return clauses;
}

/** Tombstones are never hits; `deleted` is indexed as a boolean. */
const LIVE_ONLY = [{ equals: { path: 'deleted', value: true } }];

function compound(text: string, plan: SearchPlan, category?: string): Document {
  return {
    compound: {
      should: searchClauses(text, plan),
      minimumShouldMatch: 1,
      mustNot: LIVE_ONLY,
      // A slug is its category name's slug; `inCategory` then checks each candidate exactly.
      ...(category !== undefined && {
        filter: [{ equals: { path: 'categorySlug', value: categorySlug(category) } }],
      }),
    },
  };
}

/** The fields a hit is ranked by (search/ranking.ts); the page's full records are read apart. */
export const RANK_PROJECTION = {
  _id: 0,
  slug: 1,
  name: 1,
  category: 1,
  description: 1,
  tags: 1,
  'reviews.count': 1,
} as const;

/** The best candidates by Atlas's score, in the category asked for, with that score. */
export function atlasCandidatesPipeline(
  text: string,
  plan: SearchPlan,
  category?: string,
): Document[] {
  return [
    { $search: { index: SEARCH_INDEX_NAME, ...compound(text, plan, category) } },
    { $limit: ATLAS_CANDIDATES },
    { $project: { ...RANK_PROJECTION, score: { $meta: 'searchScore' } } },
  ];
}

/** Every match counted, and counted by category, before any category filter. */
export function atlasFacetsPipeline(text: string, plan: SearchPlan): Document[] {
  return [
    {
      $searchMeta: {
        index: SEARCH_INDEX_NAME,
        facet: {
          operator: compound(text, plan),
          facets: { category: { type: 'string', path: 'category', numBuckets: 1000 } },
        },
        count: { type: 'total' },
      },
    },
  ];
}

/** What `$searchMeta` answers (`atlasFacetsPipeline`). */
export interface AtlasFacets {
  count?: { total?: number };
  facet?: { category?: { buckets?: { _id: string; count: number }[] } };
}

/** The category counts of an `$searchMeta` answer. */
export function facetCounts(meta: AtlasFacets | undefined): [string, number][] {
  return (meta?.facet?.category?.buckets ?? []).map(({ _id, count }) => [_id, count]);
}

/** What `listSearchIndexes` says of one index. */
export interface SearchIndexState {
  name: string;
  status?: string;
  queryable?: boolean;
  latestDefinition?: Document;
}
