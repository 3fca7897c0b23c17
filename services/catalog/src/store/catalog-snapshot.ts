import MiniSearch from 'minisearch';
import type { Category, SearchHit, Tool } from '../schemas/tool';
import { type Page, TOOL_SORTS, type ToolQuery, type ToolSort } from './catalog-store';
import {
  countCategories,
  queryPhrases,
  tagPhrase,
  inCategory,
  matchesAllWords,
  rankHits,
  roundScore,
  searchWords,
  toolComparator,
} from './query-semantics';

/** Relative field weights of SPEC B6: name > tags and category > description. */
export const SEARCH_BOOST = { name: 6, tags: 3, category: 2.5, description: 1 } as const;

/**
 * Words that say nothing in a directory where every tool is an AI tool. Next to other words
 * they count for little ("ai coding assistant" is about coding assistants, not about every
 * tool named "... AI"); on their own ("ai") they still search as usual.
 */
const GENERIC_TERMS = new Set(['ai', 'tool', 'tools', 'app', 'apps', 'platform', 'software']);
const GENERIC_TERM_WEIGHT = 0.1;

const TEXT_FIELDS = ['name', 'tags', 'category', 'description'] as const;

/**
 * Each tag also indexed whole ("text-to-speech" as "texttospeech"), so that word order counts:
 * "text to speech" and "speech to text" find different tools.
 */
const TAG_PHRASES = 'tagPhrases';
const TAG_PHRASE_BOOST = 10;

/**
 * One immutable version of the catalog in memory: every `/tools` order sorted once, the
 * categories counted, and a MiniSearch index (BM25 with prefix and light fuzzy matching). The
 * embedded store builds a new one for each change and swaps it in; a request keeps the snapshot
 * it started with.
 */
export class CatalogSnapshot {
  private readonly bySlug: Map<string, Tool>;
  private readonly index: MiniSearch<Tool>;
  private readonly categories: Category[];
  /** The tools in every `/tools` order, sorted once: a page is a filter and a slice. */
  private readonly sorted: Record<ToolSort, Tool[]>;

  constructor(
    tools: readonly Tool[],
    readonly version: number,
  ) {
    this.bySlug = new Map(tools.map((t) => [t.slug, t]));
    this.categories = countCategories(tools.map((t) => t.category));
    this.sorted = Object.fromEntries(
      TOOL_SORTS.map((sort) => [sort, [...tools].sort(toolComparator(sort))]),
    ) as Record<ToolSort, Tool[]>;
    this.index = new MiniSearch<Tool>({
      idField: 'slug',
      fields: [...TEXT_FIELDS, TAG_PHRASES],
      extractField: (doc, field) => {
        if (field === TAG_PHRASES) return doc.tags.map(tagPhrase).join(' ');
        const value = doc[field as keyof Tool];
        return Array.isArray(value) ? value.join(' ') : String(value);
      },
      searchOptions: {
        fields: [...TEXT_FIELDS],
        boost: SEARCH_BOOST,
        prefix: true,
        // Typos are forgiven only in longer words, where they cannot turn into other words.
        fuzzy: (term) => (term.length >= 6 ? 0.15 : false),
        // A fuzzy match weighs well under an exact one, so that a correctly spelt word does not
        // pull in its neighbours ("tracing" must not rank experiment *tracking* tools first);
        // a misspelt word still finds what it was meant to.
        weights: { fuzzy: 0.2, prefix: 0.375 },
        boostTerm: (term, _i, terms) =>
          terms.length > 1 && GENERIC_TERMS.has(term) ? GENERIC_TERM_WEIGHT : 1,
        combineWith: 'OR',
      },
    });
    this.index.addAll(tools as Tool[]);
  }

  listTools({ page, limit, category, search, sort }: ToolQuery): Page<Tool> {
    const words = search ? searchWords(search) : [];
    const ordered = this.sorted[sort];
    const matching =
      category === undefined && words.length === 0
        ? ordered
        : ordered.filter(
            (tool) =>
              (category === undefined || inCategory(tool, category)) &&
              (words.length === 0 || matchesAllWords(tool, words)),
          );
    const start = (page - 1) * limit;
    return { items: matching.slice(start, start + limit), total: matching.length };
  }

  getTool(slug: string): Tool | null {
    return this.bySlug.get(slug) ?? null;
  }

  listCategories(): Category[] {
    return this.categories;
  }

  search(text: string, limit: number): Page<SearchHit> {
    const hits: { score: number; tool: Tool }[] = [];
    const phrases = queryPhrases(text);
    const query =
      phrases.length === 0
        ? text
        : {
            combineWith: 'OR' as const,
            queries: [
              text,
              {
                queries: phrases,
                fields: [TAG_PHRASES],
                prefix: false,
                fuzzy: false,
                boost: { [TAG_PHRASES]: TAG_PHRASE_BOOST },
              },
            ],
          };
    for (const result of this.index.search(query)) {
      const tool = this.bySlug.get(result.id as string);
      if (tool) hits.push({ score: roundScore(result.score), tool });
    }
    // Only the hits that are returned become full records.
    const items = rankHits(hits, text)
      .slice(0, limit)
      .map(({ tool, score }) => ({ ...tool, score }));
    return { items, total: hits.length };
  }

  /** Every tool, ordered by name then slug. */
  allByName(): readonly Tool[] {
    return this.sorted.name;
  }
}
