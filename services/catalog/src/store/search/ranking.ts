import type { CategoryFacet } from '../../schemas/api';
import type { Tool } from '../../schemas/tool';
import { categorySlug } from '../../records/slug';
import {
  byNameThenSlug,
  countEach,
  inCategory,
  nameCollator,
  roundScore,
} from '../query-semantics';
import type { SearchPlan } from './search-plan';
import { maxEdits, withinEdits, compact } from './text';
import { FIELD_RANK, type IndexField, type ToolTerms, parseSynonymKey } from './tool-terms';

/**
 * The final ranking of search hits, the same for every engine (docs/api.md#response-bodies,
 * docs/api.md#search; docs/api.md, "Search"). An engine finds the hits and scores them its own way;
 * what decides the order is how each query word matched:
 *
 * 1. an exact name first (the query, run together, is the tool's name run together);
 * 2. then the hits matching more of the query's words, each exactly or as a word prefix, or
 *    with a typo when no hit matches that word otherwise (the word was misspelt);
 * 3. then those matching more words exactly or as a prefix: exact and prefix matches outrank
 *    typo matches;
 * 4. then those matching more words as a phrase (words joined as a whole tag, category or
 *    name; a synonym's phrase for several query words), so word order counts;
 * 5. then by where the words matched, summed over the words: name 3, tags or category 2,
 *    description 1, so a name match outranks a tag or category match, which outranks a
 *    description match; a synonym counts where its phrase stands, a joined name as the name;
 * 6. then by where typos matched;
 * 7. then by the words found in the description's lead (its first words: what the tool is);
 * 8. then by the engine's score and the tool's popularity (reviews), half and half.
 *
 * All of it is one number, `score`: each step outweighs every step below it.
 */

type RankedTool = Pick<Tool, 'name' | 'slug' | 'category' | 'description' | 'tags' | 'reviews'>;

/**
 * How each query word matched one hit: four rows of one byte per word (one array, as a hit
 * may be one of thousands): the best field rank of an exact or prefix match and of a typo match
 * (0: none), whether it matched as part of a phrase, and in the description's lead.
 */
export type WordMatches = Uint8Array;
const STRONG = 0;
const TYPO = 1;
const PHRASE = 2;
const LEAD = 3;
const ROWS = 4;

/** What one term of a tool says about the query's words, worked out once per query. */
interface TermCredit {
  strong: number[];
  typo: number[];
  joined: number[];
}

/** Fields in which joined words count: the name and whole tags, never running text. */
const JOINABLE = new Set<IndexField>(['name', 'nameCompact', 'phrases']);

/**
 * Credits a hit's query words from the terms it holds. One matcher serves one query; a term
 * is looked at once however many hits hold it.
 */
export class TermMatcher {
  private readonly credits = new Map<string, TermCredit>();

  constructor(private readonly plan: SearchPlan) {}

  empty(): WordMatches {
    return new Uint8Array(ROWS * this.plan.words.length);
  }

  /** Raises a word's rank in a row to `rank`. */
  private raise(into: WordMatches, row: number, word: number, rank: number): void {
    const at = row * this.plan.words.length + word;
    if (rank > into[at]!) into[at] = rank;
  }

  /** From the engine's own account of the matched terms and their fields (MiniSearch). */
  credit(
    terms: readonly string[],
    match: Record<string, readonly string[]>,
    into: WordMatches,
  ): void {
    for (const term of terms) {
      for (const field of match[term]!) this.creditTerm(term, field as IndexField, into);
    }
  }

  /** From every term of the tool (engines that do not say what matched). */
  fromTerms(terms: ToolTerms): WordMatches {
    const matches = this.empty();
    for (const field in terms) {
      for (const term of terms[field as IndexField]) {
        this.creditTerm(term, field as IndexField, matches);
      }
    }
    return matches;
  }

  private creditTerm(term: string, field: IndexField, into: WordMatches): void {
    if (field === 'synonyms') {
      const key = parseSynonymKey(term);
      if (!key) return;
      for (const { group, covers } of this.plan.groups) {
        if (group !== key.group) continue;
        for (const word of covers) {
          this.raise(into, STRONG, word, key.rank);
          if (key.lead) this.raise(into, LEAD, word, 1);
          // Words of the query found together, as one phrase of the group.
          if (covers.length > 1) this.raise(into, PHRASE, word, 1);
        }
      }
      return;
    }
    const rank = FIELD_RANK[field];
    const credit = this.creditOf(term);
    for (const word of credit.strong) this.raise(into, STRONG, word, rank);
    if (field === 'lead') for (const word of credit.strong) this.raise(into, LEAD, word, 1);
    for (const word of credit.typo) this.raise(into, TYPO, word, rank);
    if (JOINABLE.has(field)) {
      for (const word of credit.joined) {
        this.raise(into, STRONG, word, rank);
        this.raise(into, PHRASE, word, 1);
      }
    }
  }

  private creditOf(term: string): TermCredit {
    let credit = this.credits.get(term);
    if (credit) return credit;
    credit = { strong: [], typo: [], joined: [] };
    this.plan.words.forEach((word, index) => {
      if (term.startsWith(word)) credit!.strong.push(index);
      else if (withinEdits(word, term, maxEdits(word))) credit!.typo.push(index);
    });
    for (const { text, covers } of this.plan.joins) {
      if (term.startsWith(text)) credit.joined.push(...covers);
    }
    this.credits.set(term, credit);
    return credit;
  }
}

/** A hit as an engine found it. */
export interface Candidate<T extends RankedTool = Tool> {
  tool: T;
  engineScore: number;
  matches: WordMatches;
  /** The query, run together, is the tool's name run together. */
  exact: boolean;
}

/** Whether the tool's name, run together, is the query run together. */
export function isExactName(tool: Pick<Tool, 'name'>, plan: SearchPlan): boolean {
  return plan.exactName.length > 0 && compact(tool.name) === plan.exactName;
}

// Mixed-radix digits of the score, from the least significant: typo fields, phrase words,
// strong fields, strong words, found words, exact name. Queries count at most MAX_QUERY_WORDS
// (20) words, each field rank at most 3.
const WORDS_RADIX = 21;
const FIELDS_RADIX = 61;
const ENGINE_SHARE = 0.5;

/** Query words that no hit matches exactly or as a prefix: typos count for them. */
function misspeltWords(candidates: readonly Candidate<RankedTool>[], plan: SearchPlan): boolean[] {
  const n = plan.words.length;
  return plan.words.map((_, word) => !candidates.some((c) => c.matches[STRONG * n + word]! > 0));
}

/** The score of one hit (see the top of this file); `engine` is its engine score over the best. */
function relevance(
  { matches, exact }: Candidate<RankedTool>,
  misspelt: readonly boolean[],
  engine: number,
): number {
  let found = 0;
  let strong = 0;
  let strongFields = 0;
  let phrase = 0;
  let lead = 0;
  let typoFields = 0;
  const n = misspelt.length;
  for (let word = 0; word < n; word++) {
    const strongRank = matches[STRONG * n + word]!;
    const typoRank = strongRank > 0 ? 0 : matches[TYPO * n + word]!;
    if (strongRank > 0 || (misspelt[word] && typoRank > 0)) found += 1;
    if (strongRank > 0) strong += 1;
    strongFields += strongRank;
    phrase += matches[PHRASE * n + word]!;
    lead += matches[LEAD * n + word]!;
    typoFields += typoRank;
  }
  let score = exact ? 1 : 0;
  score = score * WORDS_RADIX + found;
  score = score * WORDS_RADIX + strong;
  score = score * WORDS_RADIX + phrase;
  score = score * FIELDS_RADIX + strongFields;
  score = score * FIELDS_RADIX + typoFields;
  score = score * WORDS_RADIX + lead;
  // The engine's share stays under 1: it only orders hits equal in everything else.
  return roundScore(score + Math.min(engine, 1) * 0.999);
}

export interface RankedHit<T> {
  tool: T;
  score: number;
}

/**
 * The best `limit` of `candidates` that `keep` lets through, best first (equal scores in name
 * order), and how many it lets through. Typos count for the words no candidate matches
 * otherwise: `candidates` are every hit of the query, before any filter.
 */
export function rankCandidates<T extends RankedTool>(
  candidates: readonly Candidate<T>[],
  plan: SearchPlan,
  limit: number,
  keep: (tool: T) => boolean = () => true,
): { items: RankedHit<T>[]; total: number } {
  const misspelt = misspeltWords(candidates, plan);
  let best = Number.MIN_VALUE;
  let mostReviews = 1;
  for (const { engineScore, tool } of candidates) {
    if (engineScore > best) best = engineScore;
    if (tool.reviews.count > mostReviews) mostReviews = tool.reviews.count;
  }
  const tieBreak = ({ engineScore, tool }: Candidate<T>) =>
    ENGINE_SHARE * (engineScore / best) +
    (1 - ENGINE_SHARE) * (Math.log1p(tool.reviews.count) / Math.log1p(mostReviews));
  const top: RankedHit<T>[] = [];
  let total = 0;
  const before = (a: RankedHit<T>, b: RankedHit<T>) =>
    a.score > b.score || (a.score === b.score && byNameThenSlug(a.tool, b.tool) < 0);
  for (const candidate of candidates) {
    if (!keep(candidate.tool)) continue;
    total += 1;
    const hit = {
      tool: candidate.tool,
      score: relevance(candidate, misspelt, tieBreak(candidate)),
    };
    // Only the best `limit` are kept in order: a page of thousands of hits is never sorted.
    if (top.length === limit && !before(hit, top[limit - 1]!)) continue;
    let at = top.length;
    while (at > 0 && before(hit, top[at - 1]!)) at -= 1;
    top.splice(at, 0, hit);
    if (top.length > limit) top.pop();
  }
  return { items: top, total };
}

/** Categories by number of matches, most first, ties by name. */
export function categoryFacets(counts: Iterable<[name: string, count: number]>): CategoryFacet[] {
  return [...counts]
    .map(([name, count]) => ({ name, slug: categorySlug(name), count }))
    .sort((a, b) => b.count - a.count || nameCollator.compare(a.name, b.name));
}

/** A filter by category name or slug, any case, that looks at each category name once. */
export function categoryFilter(
  wanted: string | undefined,
): (tool: Pick<Tool, 'category'>) => boolean {
  if (wanted === undefined) return () => true;
  const seen = new Map<string, boolean>();
  return (tool) => {
    let verdict = seen.get(tool.category);
    if (verdict === undefined) {
      verdict = inCategory(tool, wanted);
      seen.set(tool.category, verdict);
    }
    return verdict;
  };
}

/** A page of search results with its facets, from every hit an engine found. */
export interface SearchResult<T> {
  items: RankedHit<T>[];
  total: number;
  facets: { category: CategoryFacet[] };
}

function* categoriesOf(candidates: readonly Candidate<RankedTool>[]): Iterable<string> {
  for (const { tool } of candidates) yield tool.category;
}

export function searchResult<T extends RankedTool>(
  candidates: readonly Candidate<T>[],
  plan: SearchPlan,
  { limit, category }: { limit: number; category?: string | undefined },
): SearchResult<T> {
  const { items, total } = rankCandidates(candidates, plan, limit, categoryFilter(category));
  const facets = categoryFacets(countEach(categoriesOf(candidates)));
  return { items, total, facets: { category: facets } };
}
