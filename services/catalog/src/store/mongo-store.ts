import type { Collection, MongoClient } from 'mongodb';
import { connectMongo } from '../../../shared/mongo';
import type { Category, SearchHit, Tool } from '../schemas/tool';
import type { CatalogStore, ChangeSummary, OutboxEntry, Page, ToolQuery } from './catalog-store';
import {
  CATEGORY_PIPELINE,
  NAME_COLLATION,
  TEXT_SCORE_PROJECTION,
  TEXT_SCORE_SORT,
  TOOL_INDEXES,
  TOOL_PROJECTION,
  TOOLS_COLLECTION,
  type ToolDocument,
  prefixFallbackFilter,
  prefixScore,
  textSearchFilter,
  toolFilter,
  toolSort,
  upsertOperations,
} from './mongo-queries';
import { countCategoriesFromCounts, rankHits, roundScore } from './query-semantics';

/**
 * The MongoDB store: a thin adapter that sends the documents of mongo-queries.ts. Used when
 * MONGODB_URI is set; `npm run seed` fills it.
 */
export class MongoStore implements CatalogStore {
  readonly kind = 'mongodb';

  private constructor(
    private readonly client: MongoClient,
    private readonly tools: Collection<ToolDocument>,
  ) {}

  static async connect(uri: string, dbName: string): Promise<MongoStore> {
    const client = await connectMongo(uri, 'tool-directory-catalog');
    return new MongoStore(client, client.db(dbName).collection<ToolDocument>(TOOLS_COLLECTION));
  }

  async listTools(query: ToolQuery): Promise<Page<Tool>> {
    const filter = toolFilter(query);
    const [items, total] = await Promise.all([
      this.tools
        .find<Tool>(filter, { projection: TOOL_PROJECTION, collation: NAME_COLLATION })
        .sort(toolSort(query.sort))
        // A page far past the end must still be an exact integer skip for the server.
        .skip(Math.min((query.page - 1) * query.limit, Number.MAX_SAFE_INTEGER))
        .limit(query.limit)
        .toArray(),
      this.tools.countDocuments(filter),
    ]);
    return { items, total };
  }

  async getTool(slug: string): Promise<Tool | null> {
    return this.tools.findOne<Tool>({ slug }, { projection: TOOL_PROJECTION });
  }

  async listCategories(): Promise<Category[]> {
    const counts = await this.tools
      .aggregate<{ name: string; toolCount: number }>(CATEGORY_PIPELINE)
      .toArray();
    return countCategoriesFromCounts(counts);
  }

  async search(text: string, limit: number): Promise<Page<SearchHit>> {
    const [textHits, prefixHits] = await Promise.all([
      this.tools
        .find<SearchHit>(textSearchFilter(text), { projection: TEXT_SCORE_PROJECTION })
        .sort(TEXT_SCORE_SORT)
        .toArray(),
      this.tools.find<Tool>(prefixFallbackFilter(text), { projection: TOOL_PROJECTION }).toArray(),
    ]);
    const hits = new Map<string, { score: number; tool: Tool }>();
    for (const { score, ...tool } of textHits) {
      hits.set(tool.slug, { score: roundScore(score), tool });
    }
    for (const tool of prefixHits) {
      const score = roundScore(prefixScore(tool, text));
      const known = hits.get(tool.slug);
      if (!known) hits.set(tool.slug, { score, tool });
      else if (score > known.score) known.score = score;
    }
    const ranked = rankHits([...hits.values()], text);
    const items = ranked.slice(0, limit).map(({ tool, score }) => ({ ...tool, score }));
    return { items, total: ranked.length };
  }

  /** A cursor: the export streams from MongoDB in batches, never the whole catalog at once. */
  exportTools(): AsyncIterable<Tool> {
    return this.tools
      .find<Tool>({}, { projection: TOOL_PROJECTION, collation: NAME_COLLATION })
      .sort(toolSort('name'));
  }

  async ping(): Promise<void> {
    await this.client.db('admin').command({ ping: 1 });
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  // TEMPORARY until the MongoDB write path lands (helper branch h-mongo).
  version = 0;
  async refresh(): Promise<number> {
    return 0;
  }
  async upsert(): Promise<ChangeSummary> {
    throw new Error('not yet');
  }
  async delete(): Promise<ChangeSummary | null> {
    throw new Error('not yet');
  }
  async changesSince(): Promise<OutboxEntry[]> {
    return [];
  }
  async seed(tools: readonly Tool[]): Promise<ChangeSummary> {
    await this.tools.createIndexes(TOOL_INDEXES);
    await this.tools.bulkWrite(upsertOperations(tools), { ordered: false });
    return { created: [], updated: [], unchanged: [], deleted: [], version: 0 };
  }
}
