import type { Category, SearchHit, Tool } from '../schemas/tool';

export const TOOL_SORTS = ['name', '-name', 'rating', '-rating'] as const;
export type ToolSort = (typeof TOOL_SORTS)[number];

export interface ToolQuery {
  page: number;
  limit: number;
  /** A category's name or slug, any case. */
  category?: string;
  /** Words that must all occur in name, description or tags, any case. */
  search?: string;
  sort: ToolSort;
}

export interface Page<T> {
  items: T[];
  total: number;
}

/**
 * The storage contract of the catalog (docs/architecture.md). The embedded store and the
 * MongoDB store both honour it; test/catalog/store-contract.test.ts holds them to it.
 */
export interface CatalogStore {
  readonly kind: 'embedded' | 'mongodb';
  listTools(query: ToolQuery): Promise<Page<Tool>>;
  getTool(slug: string): Promise<Tool | null>;
  listCategories(): Promise<Category[]>;
  /** Full-text search, best match first; `total` counts every match, `items` at most `limit`. */
  search(text: string, limit: number): Promise<Page<SearchHit>>;
  /** Every tool with all its data, ordered by name then slug: the bulk export (SPEC B7). */
  exportTools(): AsyncIterable<Tool>;
  /** Resolves when the backing store answers. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
