import type { Category, Tool } from '../schemas/tool';
import { categorySlug } from '../records/slug';
import type { ToolSort } from '../schemas/api';

/**
 * The query semantics both stores share (docs/api.md#parameters-and-validation,
 * docs/api.md#response-bodies), kept in one place so that the embedded store and the MongoDB
 * adapter cannot drift apart.
 */

/** Lowercased words of a `search` or `q` value. */
export function searchWords(text: string): string[] {
  return text.toLowerCase().split(/\s+/).filter(Boolean);
}

/** Does a tool belong to the category named (by name or slug, any case)? */
export function inCategory(tool: Pick<Tool, 'category'>, wanted: string): boolean {
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

/**
 * `/tools?updatedSince=`: changed after the instant, not at it. Both are in the canonical form
 * (date-time.ts), whose text order is time order.
 */
export function changedAfter(tool: Pick<Tool, 'updatedAt'>, since: string): boolean {
  return tool.updatedAt > since;
}

/**
 * `/tools?verifiedBefore=`: facts last checked before the instant, not at it. Both are in the
 * canonical form (date-time.ts), whose text order is time order.
 */
export function checkedBefore(tool: Pick<Tool, 'verifiedAt'>, before: string): boolean {
  return tool.verifiedAt < before;
}

function bySlug(a: Pick<Tool, 'slug'>, b: Pick<Tool, 'slug'>): number {
  return a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0;
}

/** ICU collation for names: case-insensitive, as MongoDB's `{ locale: 'en', strength: 2 }`. */
export const nameCollator = new Intl.Collator('en', { sensitivity: 'accent' });

export function byNameThenSlug(
  a: Pick<Tool, 'name' | 'slug'>,
  b: Pick<Tool, 'name' | 'slug'>,
): number {
  return nameCollator.compare(a.name, b.name) || bySlug(a, b);
}

/** Oldest change first; no two changes share an instant, but a tie would go by slug. */
function byUpdatedAtThenSlug(
  a: Pick<Tool, 'updatedAt' | 'slug'>,
  b: Pick<Tool, 'updatedAt' | 'slug'>,
): number {
  return a.updatedAt < b.updatedAt ? -1 : a.updatedAt > b.updatedAt ? 1 : bySlug(a, b);
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
    case 'updatedAt':
      return byUpdatedAtThenSlug;
    case '-updatedAt':
      return (a, b) => -byUpdatedAtThenSlug(a, b);
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

/** How often each name occurs. */
export function countEach(names: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
  return counts;
}

/** Categories with their tool counts, from each tool's category name. */
export function countCategories(categoryNames: Iterable<string>): Category[] {
  const counts = countEach(categoryNames);
  return countCategoriesFromCounts([...counts].map(([name, toolCount]) => ({ name, toolCount })));
}

/** Scores are relative; three decimals are plenty and keep responses short. */
export function roundScore(score: number): number {
  return Math.round(score * 1000) / 1000;
}
