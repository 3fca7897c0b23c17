import type { Category, Tool } from '../schemas/tool';
import {
  type Page,
  type SearchPage,
  type SearchRequest,
  type ToolQuery,
  type ToolSort,
} from './catalog-store';
import {
  changedAfter,
  checkedBefore,
  countCategories,
  inCategory,
  matchesAllWords,
  searchWords,
  toolComparator,
} from './query-semantics';
import { searchResult } from './search/ranking';
import { planSearch } from './search/search-plan';
import { Slices } from './search/slices';
import { type Synonyms, bundledSynonyms } from './search/synonyms';
import { ToolIndex, type ToolChanges } from './search/tool-index';

type Orders = Record<ToolSort, Tool[]>;
type Compare<T> = (a: T, b: T) => number;

const byName = toolComparator('name');

const byUpdatedAt = toolComparator('updatedAt');

/**
 * Every `/tools` order from the name order: `-name` is its reverse, and a stable sort by rating
 * keeps names in order among equal ratings (the comparators of `toolComparator`); `-updatedAt`
 * is the reverse of `updatedAt`.
 */
function ordersFromNameOrder(name: Tool[]): Orders {
  const updatedAt = [...name].sort(byUpdatedAt);
  return {
    name,
    '-name': [...name].reverse(),
    rating: [...name].sort((a, b) => a.rating - b.rating),
    '-rating': [...name].sort((a, b) => b.rating - a.rating),
    updatedAt,
    '-updatedAt': [...updatedAt].reverse(),
  };
}

/** Sorts a run at a time, then merges runs pairwise, a slice at a time. */
async function sortInSlices<T>(items: readonly T[], compare: Compare<T>, slices: Slices) {
  const RUN = 500;
  let runs: T[][] = [];
  for (let start = 0; start < items.length; start += RUN) {
    runs.push(items.slice(start, start + RUN).sort(compare));
    if (slices.spent()) await slices.yield();
  }
  while (runs.length > 1) {
    const merged: T[][] = [];
    for (let i = 0; i < runs.length; i += 2) {
      const [a, b] = [runs[i]!, runs[i + 1]];
      merged.push(b ? await mergeInSlices(a, b, compare, slices) : a);
    }
    runs = merged;
  }
  return runs[0] ?? [];
}

/** Two sorted arrays as one, a slice at a time. */
async function mergeInSlices<T>(a: T[], b: T[], compare: Compare<T>, slices: Slices) {
  const out: T[] = [];
  let [i, j] = [0, 0];
  while (i < a.length && j < b.length) {
    out.push(compare(a[i]!, b[j]!) <= 0 ? a[i++]! : b[j++]!);
    // The clock is read every so many steps: a step is well under a microsecond.
    if ((out.length & 0x3ff) === 0 && slices.spent()) await slices.yield();
  }
  return out.concat(a.slice(i), b.slice(j));
}

/**
 * One version of the catalog in memory: every `/tools` order sorted once, the categories
 * counted, and the search index (MiniSearch, see search/tool-index.ts). The embedded store
 * serves one snapshot at a time and swaps in the next in one synchronous step; a request keeps
 * the snapshot it began with (an export streams the tools of its snapshot whatever changes
 * meanwhile).
 *
 * A snapshot never changes while it serves, its search index included: the next snapshot is
 * built a slice at a time beside it (`withChanges`, `buildInSlices`), so that no event-loop turn
 * stalls requests and no search sees half a change. `withChanges` takes changes into a spare
 * index, one no snapshot serves: the index of a retired snapshot, brought up to date.
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

  /** Builds a snapshot a slice at a time. */
  static async buildInSlices(
    tools: readonly Tool[],
    version: number,
    synonyms: Synonyms = bundledSynonyms(),
  ): Promise<CatalogSnapshot> {
    const slices = new Slices();
    const index = new ToolIndex(synonyms);
    await index.addInSlices(tools, slices);
    const orders = ordersFromNameOrder(await sortInSlices(tools, byName, slices));
    if (slices.spent()) await slices.yield();
    return new CatalogSnapshot(bySlugOf(tools), orders, index, synonyms, version);
  }

  /** A new search index of this snapshot's tools, built a slice at a time: a spare. */
  async spareIndex(): Promise<ToolIndex> {
    const index = new ToolIndex(this.synonyms);
    await index.addInSlices(this.sorted.name);
    return index;
  }

  /**
   * This snapshot's search index with `changes` applied (a slice at a time), once this snapshot
   * no longer serves: the next spare. Searches of this snapshot would see the changes.
   */
  async retire(changes: ToolChanges): Promise<ToolIndex> {
    await this.index.update(changes, (slug) => this.bySlug.get(slug));
    return this.index;
  }

  /**
   * The next snapshot: this one with `changes` applied, at `version`, built a slice at a time
   * (`slices`) on `spare`, an index of this snapshot's tools that no snapshot serves (the next
   * snapshot's index from then on). The orders are this snapshot's without the changed tools,
   * merged with the changed tools sorted: work in proportion to the catalog, no sorting of it.
   */
  async withChanges(
    changes: ToolChanges,
    version: number,
    spare: ToolIndex,
    slices = new Slices(),
  ): Promise<CatalogSnapshot> {
    await spare.update(changes, (slug) => this.bySlug.get(slug), slices);
    const bySlug = new Map(this.bySlug);
    const changed: Tool[] = [];
    for (const [slug, tool] of changes) {
      if (tool) {
        bySlug.set(slug, tool);
        changed.push(tool);
      } else {
        bySlug.delete(slug);
      }
    }
    const order = async (sort: ToolSort) => {
      const compare = toolComparator(sort);
      const kept = this.sorted[sort].filter((tool) => !changes.has(tool.slug));
      return mergeInSlices(kept, await sortInSlices(changed, compare, slices), compare, slices);
    };
    const name = await order('name');
    const updatedAt = await order('updatedAt');
    const orders: Orders = {
      name,
      '-name': [...name].reverse(),
      rating: await order('rating'),
      '-rating': await order('-rating'),
      updatedAt,
      '-updatedAt': [...updatedAt].reverse(),
    };
    if (slices.spent()) await slices.yield();
    return new CatalogSnapshot(bySlug, orders, spare, this.synonyms, version);
  }

  listTools(query: ToolQuery): Page<Tool> {
    const { page, limit, category, search, updatedSince, verifiedBefore, sort } = query;
    const words = search ? searchWords(search) : [];
    const ordered = this.sorted[sort];
    const matching =
      category === undefined &&
      words.length === 0 &&
      updatedSince === undefined &&
      verifiedBefore === undefined
        ? ordered
        : ordered.filter(
            (tool) =>
              (category === undefined || inCategory(tool, category)) &&
              (words.length === 0 || matchesAllWords(tool, words)) &&
              (updatedSince === undefined || changedAfter(tool, updatedSince)) &&
              (verifiedBefore === undefined || checkedBefore(tool, verifiedBefore)),
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
