import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Category, Tool } from '../schemas/tool';
import {
  type OutboxEntry,
  type Page,
  type SearchPage,
  type SearchRequest,
  type ToolQuery,
  type ToolSort,
} from './catalog-store';
import {
  countCategories,
  inCategory,
  matchesAllWords,
  searchWords,
  toolComparator,
} from './query-semantics';
import { searchResult } from './search/ranking';
import { planSearch } from './search/search-plan';
import { type Synonyms, bundledSynonyms } from './search/synonyms';
import { ToolIndex } from './search/tool-index';

type Orders = Record<ToolSort, Tool[]>;

const byName = toolComparator('name');
const byRating = toolComparator('rating');

/**
 * Every `/tools` order from the name order: `-name` is its reverse, and a stable sort by rating
 * keeps names in order among equal ratings (the comparators of `toolComparator`).
 */
function ordersFromNameOrder(name: Tool[]): Orders {
  return {
    name,
    '-name': [...name].reverse(),
    rating: [...name].sort((a, b) => a.rating - b.rating),
    '-rating': [...name].sort((a, b) => b.rating - a.rating),
  };
}

/** Sorts a run at a time, then merges runs pairwise, letting the event loop run in between. */
async function sortInSlices<T>(items: readonly T[], compare: (a: T, b: T) => number): Promise<T[]> {
  const RUN = 1_000;
  let runs: T[][] = [];
  for (let start = 0; start < items.length; start += RUN) {
    runs.push(items.slice(start, start + RUN).sort(compare));
    await nextTurn();
  }
  while (runs.length > 1) {
    const merged: T[][] = [];
    for (let i = 0; i < runs.length; i += 2) {
      const [a, b] = [runs[i]!, runs[i + 1]];
      merged.push(b ? mergeSorted(a, b, compare) : a);
      await nextTurn();
    }
    runs = merged;
  }
  return runs[0] ?? [];
}

function mergeSorted<T>(a: T[], b: T[], compare: (a: T, b: T) => number): T[] {
  const out: T[] = [];
  let [i, j] = [0, 0];
  while (i < a.length && j < b.length) out.push(compare(a[i]!, b[j]!) <= 0 ? a[i++]! : b[j++]!);
  return out.concat(a.slice(i), b.slice(j));
}

/** Inserts into a sorted array at the place `compare` gives (binary search). */
function insertSorted<T>(sorted: T[], item: T, compare: (a: T, b: T) => number): void {
  let [low, high] = [0, sorted.length];
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compare(sorted[mid]!, item) <= 0) low = mid + 1;
    else high = mid;
  }
  sorted.splice(low, 0, item);
}

/**
 * One version of the catalog in memory: every `/tools` order sorted once, the categories
 * counted, and the search index (MiniSearch, see search/tool-index.ts). The embedded store
 * serves one snapshot at a time and swaps in the next; a request keeps the snapshot it began
 * with (an export streams the tools of its snapshot whatever changes meanwhile).
 *
 * A few changes make the next snapshot at once, sharing the search index and updating it in
 * the same synchronous step as the swap: searches run synchronously, so none sees the index of
 * one version and the tools of another. Many changes build a whole new snapshot a slice at a
 * time (`buildInSlices`) while this one keeps serving, so no event-loop turn stalls requests.
 */
export class CatalogSnapshot {
  private readonly categories: Category[];

  private constructor(
    private readonly bySlug: Map<string, Tool>,
    /** The tools in every `/tools` order, sorted once: a page is a filter and a slice. */
    private readonly sorted: Orders,
    private readonly index: ToolIndex,
    private readonly synonyms: Synonyms,
    readonly version: number,
  ) {
    this.categories = countCategories(sorted.name.map((tool) => tool.category));
  }

  /** Builds a snapshot in one go (at start, before any request). */
  static build(
    tools: readonly Tool[],
    version: number,
    synonyms: Synonyms = bundledSynonyms(),
  ): CatalogSnapshot {
    const index = new ToolIndex(synonyms);
    for (const tool of tools) index.add(tool);
    const orders = ordersFromNameOrder([...tools].sort(byName));
    return new CatalogSnapshot(bySlugOf(tools), orders, index, synonyms, version);
  }

  /** Builds a snapshot a slice at a time, yielding to the event loop between slices. */
  static async buildInSlices(
    tools: readonly Tool[],
    version: number,
    synonyms: Synonyms = bundledSynonyms(),
  ): Promise<CatalogSnapshot> {
    const index = new ToolIndex(synonyms);
    await index.addInSlices(tools);
    const orders = ordersFromNameOrder(await sortInSlices(tools, byName));
    await nextTurn();
    return new CatalogSnapshot(bySlugOf(tools), orders, index, synonyms, version);
  }

  /** Every tool, keyed by slug (a copy). */
  toolsBySlug(): Map<string, Tool> {
    return new Map(this.bySlug);
  }

  /**
   * The next snapshot: this one with the outbox entries applied, in order. Updates the shared
   * search index; the caller swaps the result in at once (see the class comment).
   */
  withChanges(entries: readonly OutboxEntry[]): CatalogSnapshot {
    const bySlug = new Map(this.bySlug);
    const touched = new Set<string>();
    let version = this.version;
    for (const entry of entries) {
      touched.add(entry.slug);
      if (entry.type === 'tool.deleted') bySlug.delete(entry.slug);
      else bySlug.set(entry.slug, entry.tool);
      version = entry.version;
    }
    const name = this.sorted.name.filter((tool) => !touched.has(tool.slug));
    const rating = this.sorted.rating.filter((tool) => !touched.has(tool.slug));
    for (const slug of touched) {
      const tool = bySlug.get(slug);
      if (!tool) {
        this.index.remove(slug);
        continue;
      }
      this.index.put(tool);
      insertSorted(name, tool, byName);
      insertSorted(rating, tool, byRating);
    }
    const orders: Orders = {
      name,
      '-name': [...name].reverse(),
      rating,
      '-rating': [...name].sort((a, b) => b.rating - a.rating),
    };
    return new CatalogSnapshot(bySlug, orders, this.index, this.synonyms, version);
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

  search({ text, limit, category }: SearchRequest): SearchPage {
    const plan = planSearch(text, this.synonyms);
    const candidates = this.index.search(plan, (slug) => this.bySlug.get(slug));
    const { items, total, facets } = searchResult(candidates, plan, { limit, category });
    // Only the hits that are returned become full records.
    return { items: items.map(({ tool, score }) => ({ ...tool, score })), total, facets };
  }

  /** Every tool, ordered by name then slug. */
  allByName(): readonly Tool[] {
    return this.sorted.name;
  }
}

function bySlugOf(tools: readonly Tool[]): Map<string, Tool> {
  return new Map(tools.map((tool) => [tool.slug, tool]));
}
