import type { Category, Tool } from '../schemas/tool';
import { categorySlug } from '../slug';
import type { ToolSort } from './catalog-store';

/**
 * The query semantics both stores share (SPEC B5, B6), kept in one place so that the embedded
 * store and the MongoDB adapter cannot drift apart.
 */

/** Lowercased words of a `search` or `q` value. */
export function searchWords(text: string): string[] {
  return text.toLowerCase().split(/\s+/).filter(Boolean);
}

/** A tag as one word: "text-to-speech" -> "texttospeech". */
export function tagPhrase(tag: string): string {
  return tag.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** Runs of two to four adjacent query words, joined as tag phrases ("text to speech" -> "texttospeech"). */
export function queryPhrases(text: string): string[] {
  const words = searchWords(text).map(tagPhrase).filter(Boolean);
  const phrases: string[] = [];
  for (let size = 2; size <= 4; size++) {
    for (let start = 0; start + size <= words.length; start++) {
      phrases.push(words.slice(start, start + size).join(''));
    }
  }
  return phrases;
}

/** Does a tool belong to the category named (by name or slug, any case)? */
export function inCategory(tool: Tool, wanted: string): boolean {
  const lower = wanted.toLowerCase();
  return tool.category.toLowerCase() === lower || categorySlug(tool.category) === lower;
}

/** `/tools?search=`: every word occurs in the name, the description or a tag, any case. */
export function matchesAllWords(tool: Tool, words: string[]): boolean {
  const name = tool.name.toLowerCase();
  const description = tool.description.toLowerCase();
  return words.every(
    (word) =>
      name.includes(word) ||
      description.includes(word) ||
      tool.tags.some((tag) => tag.toLowerCase().includes(word)),
  );
}

/** ICU collation for names: case-insensitive, as MongoDB's `{ locale: 'en', strength: 2 }`. */
const nameCollator = new Intl.Collator('en', { sensitivity: 'accent' });

function byNameThenSlug(a: Pick<Tool, 'name' | 'slug'>, b: Pick<Tool, 'name' | 'slug'>): number {
  return nameCollator.compare(a.name, b.name) || (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0);
}

/** Comparator of `/tools` ordering: stable, every tie broken down to the unique slug. */
export function toolComparator(sort: ToolSort): (a: Tool, b: Tool) => number {
  switch (sort) {
    case 'name':
      return byNameThenSlug;
    case '-name':
      return (a, b) => -byNameThenSlug(a, b);
    case 'rating':
      return (a, b) => a.rating - b.rating || byNameThenSlug(a, b);
    case '-rating':
      return (a, b) => b.rating - a.rating || byNameThenSlug(a, b);
  }
}

/** Categories from per-name counts, with their slugs, ordered by name. */
export function countCategoriesFromCounts(
  counts: { name: string; toolCount: number }[],
): Category[] {
  return counts
    .map(({ name, toolCount }) => ({ name, slug: categorySlug(name), toolCount }))
    .sort((a, b) => nameCollator.compare(a.name, b.name));
}

/** Categories with their tool counts, from each tool's category name. */
export function countCategories(categoryNames: Iterable<string>): Category[] {
  const counts = new Map<string, number>();
  for (const name of categoryNames) counts.set(name, (counts.get(name) ?? 0) + 1);
  return countCategoriesFromCounts([...counts].map(([name, toolCount]) => ({ name, toolCount })));
}

type RankedFields = Pick<Tool, 'name' | 'slug' | 'category' | 'description' | 'tags'>;

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A query word as a whole word or the start of one, any case ("lang" in "LangChain"). */
function wordStart(word: string): RegExp {
  return new RegExp(`(?:^|[^a-z0-9])${escapeRegExp(word)}`, 'i');
}

/** Where a query word occurs, as SPEC B6 ranks fields: name 3, tags or category 2, description 1. */
function fieldRank(tool: RankedFields, word: RegExp): number {
  if (word.test(tool.name)) return 3;
  if (word.test(tool.category) || tool.tags.some((tag) => word.test(tag))) return 2;
  return word.test(tool.description) ? 1 : 0;
}

/**
 * Final ranking of search hits (SPEC B6), as one relevance score that the order follows: an
 * exact name first; then the hits that contain more of the query's words; then by where the
 * words occur (summed over the words: a match in the name outranks one in tags or category,
 * which outranks one in the description); then by the engine's own score, scaled into the
 * last decimal place. Equal scores come back in name order.
 */
export function rankHits<T extends { score: number; tool: RankedFields }>(
  hits: T[],
  text: string,
): T[] {
  const words = searchWords(text).map(wordStart);
  const wanted = text.trim().toLowerCase();
  const best = Math.max(...hits.map((hit) => hit.score), Number.MIN_VALUE);
  for (const hit of hits) {
    const ranks = words.map((word) => fieldRank(hit.tool, word));
    const found = ranks.filter((rank) => rank > 0).length;
    const fields = ranks.reduce((sum, rank) => sum + rank, 0);
    const exact = hit.tool.name.toLowerCase() === wanted ? EXACT_NAME : 0;
    hit.score = roundScore(exact + found * WORD + fields * FIELD + (hit.score / best) * ENGINE);
  }
  return hits.sort((a, b) => b.score - a.score || byNameThenSlug(a.tool, b.tool));
}

/** Score weights: each step outweighs everything below it (queries hold at most 100 words). */
const ENGINE = 9.999;
const FIELD = 10;
const WORD = FIELD * 3 * 100 + ENGINE;
const EXACT_NAME = WORD * 101;

/** Scores are relative; three decimals are plenty and keep responses short. */
export function roundScore(score: number): number {
  return Math.round(score * 1000) / 1000;
}
