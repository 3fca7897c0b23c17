import MiniSearch, { type QueryCombination } from 'minisearch';
import type { Tool } from '../../schemas/tool';
import { type Candidate, TermMatcher } from './ranking';
import { type SearchPlan, swappedWords } from './search-plan';
import { type Slices, forEachInSlices } from './slices';
import type { Synonyms } from './synonyms';
import { compact, maxEdits } from './text';
import { INDEX_FIELDS, type IndexField, type ToolTerms, sameTerms, toolTerms } from './tool-terms';

/** BM25 field weights (docs/api.md#response-bodies: name > tags and category > description). */
const BOOST: Record<IndexField, number> = {
  name: 6,
  nameCompact: 6,
  tags: 3,
  phrases: 3,
  category: 2.5,
  description: 1,
  lead: 1,
  synonyms: 0.5,
};

/** A whole tag typed as separate words ("text to speech") weighs like a strong name match. */
const PHRASE_BOOST = 10;

/**
 * Typo and prefix matches weigh well under exact ones in the engine's score, so that a
 * correctly spelt word does not pull in its neighbours ("tracing" must not rank experiment
 * *tracking* tools first); `rankHits` puts them below exact and prefix matches anyway.
 */
const WEIGHTS = { fuzzy: 0.2, prefix: 0.375 };

/** Changes to the catalog: each changed tool's slug with its new record, or null if deleted. */
export type ToolChanges = ReadonlyMap<string, Tool | null>;

/**
 * The embedded store's search engine: MiniSearch (BM25) over the terms of `toolTerms`, queried
 * as docs/api.md#search asks. Terms are tokenized before they reach MiniSearch (each field's terms
 * are handed over joined by spaces), so that the index and the ranking see the same terms.
 */
export class ToolIndex {
  private readonly index: MiniSearch<Tool>;
  /** Each tool's name run together, to tell exact-name hits. */
  private readonly compactNames = new Map<string, string>();

  constructor(synonyms: Synonyms) {
    // MiniSearch extracts a tool's fields one after another: its terms are worked out once.
    let lastTool: Tool | undefined;
    let lastTerms: ToolTerms | undefined;
    const termsOf = (tool: Tool): ToolTerms => {
      if (tool !== lastTool) [lastTool, lastTerms] = [tool, toolTerms(tool, synonyms)];
      return lastTerms!;
    };
    this.index = new MiniSearch<Tool>({
      idField: 'slug',
      fields: [...INDEX_FIELDS],
      extractField: (tool, field) =>
        field === 'slug' ? tool.slug : termsOf(tool)[field as IndexField].join(' '),
      tokenize: (text) => text.split(' '),
      processTerm: (term) => term || null,
    });
  }

  add(tool: Tool): void {
    this.index.add(tool);
    this.compactNames.set(tool.slug, compact(tool.name));
  }

  /** Adds tools a slice at a time (see slices.ts). */
  async addInSlices(tools: Iterable<Tool>, slices?: Slices): Promise<void> {
    await forEachInSlices(tools, (tool) => this.add(tool), slices);
  }

  /**
   * Applies changes a slice at a time (see slices.ts). `indexed` gives a changed tool's record
   * as this index holds it, if it does: a tool is removed by its terms, at once (MiniSearch's
   * `discard` would leave them to a vacuum of the whole index, and count them in the meantime).
   * A tool whose terms are the same stays as it is (the snapshot gives each hit its record).
   */
  async update(
    changes: ToolChanges,
    indexed: (slug: string) => Tool | undefined,
    slices?: Slices,
  ): Promise<void> {
    await forEachInSlices(
      changes,
      ([slug, tool]) => {
        const old = indexed(slug);
        if (old && tool && sameTerms(old, tool)) return;
        if (old) this.remove(old);
        if (tool) this.add(tool);
      },
      slices,
    );
  }

  private remove(tool: Tool): void {
    this.index.remove(tool);
    this.compactNames.delete(tool.slug);
  }

  /**
   * Every tool the query finds, with its engine score and how each query word matched, in no
   * particular order. `toolOf` gives each hit's record (a slug it does not know is left out).
   */
  search(plan: SearchPlan, toolOf: (slug: string) => Tool | undefined): Candidate[] {
    if (plan.words.length === 0) return [];
    const matcher = new TermMatcher(plan);
    const found = new Map<string, Candidate>();
    // The parts run one by one (any of them may match): each part's matched terms and fields
    // are credited as they come, where MiniSearch's own OR would keep one part's fields only.
    for (const part of miniSearchQueries(plan)) {
      for (const result of this.index.search(part)) {
        const slug = result.id as string;
        let candidate = found.get(slug);
        if (!candidate) {
          const tool = toolOf(slug);
          if (!tool) continue;
          const exact = this.compactNames.get(slug) === plan.exactName;
          candidate = { tool, engineScore: 0, matches: matcher.empty(), exact };
          found.set(slug, candidate);
        }
        candidate.engineScore += result.score;
        matcher.credit(result.terms, result.match, candidate.matches);
      }
    }
    return [...found.values()];
  }
}

/** Where a query word is looked for (whole tags written together only whole, see below). */
const WORD_FIELDS: IndexField[] = [
  'name',
  'nameCompact',
  'tags',
  'category',
  'description',
  'lead',
];

const byWordLength = (term: string) => maxEdits(term) || false;

/** The MiniSearch queries of a plan: a tool any of them finds is a hit. */
export function miniSearchQueries(plan: SearchPlan): QueryCombination[] {
  const boost = (
    fields: readonly IndexField[],
    overrides: Partial<Record<IndexField, number>> = {},
  ) => Object.fromEntries(fields.map((field) => [field, overrides[field] ?? BOOST[field]]));
  const queries: QueryCombination[] = [];
  const keys = plan.synonymKeys;
  if (keys.length > 0) {
    queries.push({
      queries: [keys.join(' ')],
      fields: ['synonyms'],
      boost: { synonyms: BOOST.synonyms },
      prefix: false,
      fuzzy: false,
      // How many other synonyms a tool holds says nothing about this one.
      bm25: { k: 1.2, b: 0, d: 0.5 },
    });
  }
  if (plan.joins.length > 0) {
    const fields: IndexField[] = ['name', 'nameCompact', 'phrases'];
    queries.push({
      queries: [plan.joins.map((join) => join.text).join(' ')],
      fields,
      boost: boost(fields, { phrases: PHRASE_BOOST }),
      prefix: true,
      fuzzy: false,
    });
  }
  // A word may be a whole tag written together ("multiagent"); only whole, not as a prefix:
  // "text" is no hint of "text-to-speech".
  queries.push({
    queries: [plan.words.join(' ')],
    fields: ['phrases'],
    boost: boost(['phrases']),
    prefix: false,
    fuzzy: false,
  });
  // MiniSearch counts a swap of two letters as two edits; the swapped words count it as one.
  const swaps = swappedWords(plan);
  const swapped = (words: string[], fuzzy: QueryCombination['fuzzy']): QueryCombination => ({
    queries: [words.join(' ')],
    fields: WORD_FIELDS,
    boost: boost(WORD_FIELDS),
    prefix: false,
    fuzzy,
    boostTerm: () => WEIGHTS.fuzzy,
  });
  // A swap and one more edit in the words allowed two; or two swaps.
  if (swaps.once.length > 0) {
    queries.push(swapped(swaps.once, (term) => (maxEdits(term) === 2 ? 1 : false)));
  }
  if (swaps.twice.length > 0) queries.push(swapped(swaps.twice, false));
  queries.push({
    queries: [plan.words.join(' ')],
    fields: WORD_FIELDS,
    boost: boost(WORD_FIELDS),
    prefix: true,
    fuzzy: byWordLength,
  });
  return queries.map((part) => ({ weights: WEIGHTS, ...part }));
}
