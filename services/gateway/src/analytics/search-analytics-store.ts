/**
 * Search analytics (docs/api.md#search-analytics): what the gateway keeps of searches, per key,
 * normalised query and UTC day, for SEARCH_ANALYTICS_RETENTION_DAYS, in the key store's database
 * (keys.db, or the key store's MongoDB). Nothing of a search but its key, its query, whether it
 * found anything, and when.
 */

/** Query texts are kept this long, then dropped. */
export const SEARCH_ANALYTICS_RETENTION_DAYS = 30;

/** A key's searches of one query on one UTC day, as one batch adds them. */
export interface SearchTally {
  keyId: string;
  query: string;
  /** YYYY-MM-DD, UTC. */
  day: string;
  count: number;
  noHits: number;
  /** ISO instants; lastNoHitAt null when every search found something. */
  lastAt: string;
  lastNoHitAt: string | null;
}

/** One query of a key's report: how often, and when last. */
export interface QueryCount {
  query: string;
  count: number;
  lastAt: string;
}

export interface KeySearches {
  top: QueryCount[];
  noHit: QueryCount[];
  totals: { searches: number; noHits: number };
}

/** A query that found nothing, across every key (`tool-directory catalog gaps`). */
export interface CatalogGap extends QueryCount {
  keys: number;
}

/** How many queries of each list a report holds. */
export const REPORT_SIZE = 20;

export interface SearchAnalyticsStore {
  /** Adds a batch in one write, summing into what the store holds for the same key, query, day. */
  add(tallies: readonly SearchTally[]): Promise<void>;
  /** Drops every day before `day`: the retention. */
  prune(day: string): Promise<void>;
  /** A key's report over the days from `fromDay` on. */
  ofKey(keyId: string, fromDay: string): Promise<KeySearches>;
  /** The queries that found nothing from `fromDay` on, most often first. */
  gaps(fromDay: string, limit: number): Promise<CatalogGap[]>;
}
