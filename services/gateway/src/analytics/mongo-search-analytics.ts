import type { AnyBulkWriteOperation, Collection, Db, Document, IndexDescription } from 'mongodb';
import {
  type CatalogGap,
  type KeySearches,
  type QueryCount,
  REPORT_SIZE,
  SEARCH_ANALYTICS_RETENTION_DAYS,
  type SearchAnalyticsStore,
  type SearchTally,
} from './search-analytics-store';

export const SEARCH_COLLECTION = 'search_queries';

export interface SearchDocument {
  _id: { keyId: string; day: string; query: string };
  count: number;
  noHits: number;
  lastAt: string;
  lastNoHitAt?: string;
  /** The day's end plus the retention: MongoDB's TTL monitor drops it then. */
  expiresAt: Date;
}

export const SEARCH_INDEXES: IndexDescription[] = [
  { key: { expiresAt: 1 }, name: 'retention_ttl', expireAfterSeconds: 0 },
  { key: { '_id.keyId': 1, '_id.day': 1 }, name: 'key_day' },
  { key: { '_id.day': 1, noHits: 1 }, name: 'day_no_hits' },
];

const DAY_MS = 86_400_000;

/** One batch as one bulk write: each tally summed into its document. */
export function addOperations(
  tallies: readonly SearchTally[],
): AnyBulkWriteOperation<SearchDocument>[] {
  return tallies.map(({ keyId, query, day, count, noHits, lastAt, lastNoHitAt }) => ({
    updateOne: {
      filter: { _id: { keyId, day, query } },
      update: {
        $inc: { count, noHits },
        $max: { lastAt, ...(lastNoHitAt !== null && { lastNoHitAt }) },
        $setOnInsert: {
          expiresAt: new Date(Date.parse(day) + (SEARCH_ANALYTICS_RETENTION_DAYS + 1) * DAY_MS),
        },
      },
      upsert: true,
    },
  }));
}

function report(match: Document, sum: string, last: string): Document[] {
  return [
    { $match: match },
    { $group: { _id: '$_id.query', count: { $sum: sum }, lastAt: { $max: last } } },
    { $sort: { count: -1, lastAt: -1, _id: 1 } },
    { $limit: REPORT_SIZE },
    { $project: { _id: 0, query: '$_id', count: 1, lastAt: 1 } },
  ];
}

/** A key's report: its top queries, its no-hit queries and the totals, in one aggregation. */
export function keyReportPipeline(keyId: string, fromDay: string): Document[] {
  return [
    { $match: { '_id.keyId': keyId, '_id.day': { $gte: fromDay } } },
    {
      $facet: {
        top: report({}, '$count', '$lastAt'),
        noHit: report({ noHits: { $gt: 0 } }, '$noHits', '$lastNoHitAt'),
        totals: [
          { $group: { _id: null, searches: { $sum: '$count' }, noHits: { $sum: '$noHits' } } },
        ],
      },
    },
  ];
}

export function gapsPipeline(fromDay: string, limit: number): Document[] {
  return [
    { $match: { '_id.day': { $gte: fromDay }, noHits: { $gt: 0 } } },
    {
      $group: {
        _id: '$_id.query',
        count: { $sum: '$noHits' },
        keys: { $addToSet: '$_id.keyId' },
        lastAt: { $max: '$lastNoHitAt' },
      },
    },
    { $project: { _id: 0, query: '$_id', count: 1, keys: { $size: '$keys' }, lastAt: 1 } },
    { $sort: { count: -1, keys: -1, query: 1 } },
    { $limit: limit },
  ];
}

/** Search analytics in the key store's MongoDB database; MongoDB's TTL index keeps the retention. */
export class MongoSearchAnalytics implements SearchAnalyticsStore {
  private constructor(private readonly searches: Collection<SearchDocument>) {}

  static async open(db: Db): Promise<MongoSearchAnalytics> {
    const searches = db.collection<SearchDocument>(SEARCH_COLLECTION);
    await searches.createIndexes(SEARCH_INDEXES);
    return new MongoSearchAnalytics(searches);
  }

  async add(tallies: readonly SearchTally[]): Promise<void> {
    if (tallies.length > 0)
      await this.searches.bulkWrite(addOperations(tallies), { ordered: false });
  }

  async prune(day: string): Promise<void> {
    await this.searches.deleteMany({ '_id.day': { $lt: day } });
  }

  async ofKey(keyId: string, fromDay: string): Promise<KeySearches> {
    const [result] = await this.searches
      .aggregate<{
        top: QueryCount[];
        noHit: QueryCount[];
        totals: { searches: number; noHits: number }[];
      }>(keyReportPipeline(keyId, fromDay))
      .toArray();
    const totals = result?.totals[0];
    return {
      top: result?.top ?? [],
      noHit: result?.noHit ?? [],
      totals: { searches: totals?.searches ?? 0, noHits: totals?.noHits ?? 0 },
    };
  }

  async gaps(fromDay: string, limit: number): Promise<CatalogGap[]> {
    return this.searches.aggregate<CatalogGap>(gapsPipeline(fromDay, limit)).toArray();
  }
}
