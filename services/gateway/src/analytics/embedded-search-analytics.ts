import type { EmbeddedDatabase } from '../../../shared/embedded/embedded-database';
import {
  type CatalogGap,
  type KeySearches,
  type QueryCount,
  REPORT_SIZE,
  type SearchAnalyticsStore,
  type SearchTally,
} from './search-analytics-store';

/** The table of keys.db's migration that holds the search analytics. */
export function createSearchTable(db: EmbeddedDatabase): void {
  db.exec(`CREATE TABLE search_queries (
      key_id TEXT NOT NULL,
      query TEXT NOT NULL,
      day TEXT NOT NULL,
      count INTEGER NOT NULL,
      no_hits INTEGER NOT NULL,
      last_at TEXT NOT NULL,
      last_no_hit_at TEXT,
      PRIMARY KEY (key_id, day, query)
    );
    CREATE INDEX search_queries_day ON search_queries (day)`);
}

/** Search analytics in keys.db: every gateway on this DATA_DIR adds to the same rows. */
export class EmbeddedSearchAnalytics implements SearchAnalyticsStore {
  private readonly addAll;
  private readonly statements;

  constructor(db: EmbeddedDatabase) {
    const add = db.prepare<SearchTally>(
      `INSERT INTO search_queries (key_id, query, day, count, no_hits, last_at, last_no_hit_at)
       VALUES (@keyId, @query, @day, @count, @noHits, @lastAt, @lastNoHitAt)
       ON CONFLICT (key_id, day, query) DO UPDATE SET
         count = count + excluded.count,
         no_hits = no_hits + excluded.no_hits,
         last_at = max(last_at, excluded.last_at),
         last_no_hit_at = CASE WHEN excluded.last_no_hit_at IS NULL THEN last_no_hit_at
           ELSE max(coalesce(last_no_hit_at, ''), excluded.last_no_hit_at) END`,
    );
    this.addAll = db.transaction((tallies: readonly SearchTally[]) => {
      for (const tally of tallies) add.run(tally);
    });
    this.statements = {
      prune: db.prepare<[string]>('DELETE FROM search_queries WHERE day < ?'),
      top: db.prepare<[string, string, number], QueryCount>(
        `SELECT query, sum(count) AS count, max(last_at) AS lastAt FROM search_queries
         WHERE key_id = ? AND day >= ? GROUP BY query
         ORDER BY count DESC, lastAt DESC, query LIMIT ?`,
      ),
      noHit: db.prepare<[string, string, number], QueryCount>(
        `SELECT query, sum(no_hits) AS count, max(last_no_hit_at) AS lastAt FROM search_queries
         WHERE key_id = ? AND day >= ? AND no_hits > 0 GROUP BY query
         ORDER BY count DESC, lastAt DESC, query LIMIT ?`,
      ),
      totals: db.prepare<[string, string], { searches: number | null; noHits: number | null }>(
        `SELECT sum(count) AS searches, sum(no_hits) AS noHits FROM search_queries
         WHERE key_id = ? AND day >= ?`,
      ),
      gaps: db.prepare<[string, number], CatalogGap>(
        `SELECT query, sum(no_hits) AS count, count(DISTINCT key_id) AS keys,
           max(last_no_hit_at) AS lastAt
         FROM search_queries WHERE day >= ? AND no_hits > 0 GROUP BY query
         ORDER BY count DESC, keys DESC, query LIMIT ?`,
      ),
    };
  }

  async add(tallies: readonly SearchTally[]): Promise<void> {
    if (tallies.length > 0) this.addAll.immediate(tallies);
  }

  async prune(day: string): Promise<void> {
    this.statements.prune.run(day);
  }

  async ofKey(keyId: string, fromDay: string): Promise<KeySearches> {
    const { top, noHit, totals } = this.statements;
    const sums = totals.get(keyId, fromDay)!;
    return {
      top: top.all(keyId, fromDay, REPORT_SIZE),
      noHit: noHit.all(keyId, fromDay, REPORT_SIZE),
      totals: { searches: sums.searches ?? 0, noHits: sums.noHits ?? 0 },
    };
  }

  async gaps(fromDay: string, limit: number): Promise<CatalogGap[]> {
    return this.statements.gaps.all(fromDay, limit);
  }
}
