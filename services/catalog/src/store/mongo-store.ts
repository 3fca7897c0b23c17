import type { ClientSession, Collection, MongoClient } from 'mongodb';
import { connectMongo } from '../../../shared/mongo';
import { InvalidToolsError, type KnownTool, validateTools } from '../records/tool-validator';
import type { Category, SearchHit, Tool } from '../schemas/tool';
import type { CatalogStore, ChangeSummary, OutboxEntry, Page, ToolQuery } from './catalog-store';
import {
  CATEGORY_PIPELINE,
  COUNTERS_COLLECTION,
  type CounterDocument,
  MARK_LIVE,
  NAME_COLLATION,
  OUTBOX_COLLECTION,
  OUTBOX_INDEXES,
  OUTBOX_ORDER,
  type OutboxDocument,
  type StoredDocument,
  type ToolWrites,
  TEXT_SCORE_PROJECTION,
  TEXT_SCORE_SORT,
  TOOL_INDEXES,
  TOOL_PROJECTION,
  TOOLS_COLLECTION,
  TRANSACTION_OPTIONS,
  VERSION_COUNTER,
  changesSinceFilter,
  fromOutboxDocument,
  isDuplicateName,
  live,
  outboxDocuments,
  planUpsert,
  prefixFallbackFilter,
  prefixScore,
  seedOperations,
  sameNameFilter,
  seededChanges,
  summarize,
  textSearchFilter,
  toolFilter,
  toolSort,
  versionIncrement,
  writeOperations,
} from './mongo-queries';
import { countCategoriesFromCounts, rankHits, roundScore } from './query-semantics';

/**
 * The MongoDB store: a thin adapter that sends the documents of mongo-queries.ts. Used when
 * MONGODB_URI is set; `npm run seed` fills it. Each write runs in one transaction with its
 * outbox entries and the version counter, so MongoDB must be a replica set (checked at connect).
 */
export class MongoStore implements CatalogStore {
  readonly kind = 'mongodb';
  private knownVersion = 0;

  private constructor(
    private readonly client: MongoClient,
    private readonly tools: Collection<StoredDocument>,
    private readonly outbox: Collection<OutboxDocument>,
    private readonly counters: Collection<CounterDocument>,
  ) {}

  static async connect(uri: string, dbName: string): Promise<MongoStore> {
    const client = await connectMongo(uri, 'tool-directory-catalog', { transactions: true });
    const db = client.db(dbName);
    const store = new MongoStore(
      client,
      // Like the embedded store's JSON: an absent field stays absent, never null.
      db.collection<StoredDocument>(TOOLS_COLLECTION, { ignoreUndefined: true }),
      db.collection<OutboxDocument>(OUTBOX_COLLECTION, { ignoreUndefined: true }),
      db.collection<CounterDocument>(COUNTERS_COLLECTION),
    );
    await store.refresh();
    return store;
  }

  get version(): number {
    return this.knownVersion;
  }

  async refresh(): Promise<number> {
    const counter = await this.counters.findOne(VERSION_COUNTER);
    this.knownVersion = Math.max(this.knownVersion, counter?.value ?? 0);
    return this.knownVersion;
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
    return this.tools.findOne<Tool>(live({ slug }), { projection: TOOL_PROJECTION });
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
      .find<Tool>(live(), { projection: TOOL_PROJECTION, collation: NAME_COLLATION })
      .sort(toolSort('name'));
  }

  async ping(): Promise<void> {
    await this.client.db('admin').command({ ping: 1 });
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /**
   * Runs `writeTools` and records its changes in one transaction: the tool writes, one `$inc`
   * of the version counter for all of them and their outbox entries. A write that changes
   * nothing writes nothing, not even the counter.
   */
  private async transaction(
    writeTools: (session: ClientSession) => Promise<ToolWrites>,
  ): Promise<ToolWrites & { version?: number }> {
    const at = new Date().toISOString();
    return this.client.withSession((session) =>
      session.withTransaction(async () => {
        const writes = await writeTools(session);
        if (writes.changes.length === 0) return writes;
        const counter = await this.counters.findOneAndUpdate(
          VERSION_COUNTER,
          versionIncrement(writes.changes.length),
          { upsert: true, returnDocument: 'after', session },
        );
        const version = counter!.value;
        await this.outbox.insertMany(outboxDocuments(writes.changes, version, at), { session });
        return { ...writes, version };
      }, TRANSACTION_OPTIONS),
    );
  }

  /** `written`: the records of an upsert or seed, to name the one a duplicate name refused. */
  private async write(
    writeTools: (session: ClientSession) => Promise<ToolWrites>,
    written: readonly Tool[] = [],
  ): Promise<ChangeSummary> {
    const result = await this.transaction(writeTools).catch(async (err: unknown) => {
      throw isDuplicateName(err) ? await this.nameConflict(written, err) : err;
    });
    if (result.version === undefined) {
      return summarize(result.changes, result.unchanged, await this.refresh());
    }
    this.knownVersion = Math.max(this.knownVersion, result.version);
    return summarize(result.changes, result.unchanged, this.knownVersion);
  }

  /**
   * `name_unique` refused a write: another writer took a name after the records were checked.
   * Names the record and the tool now holding its name, as the validator would have.
   */
  private async nameConflict(tools: readonly Tool[], cause: unknown): Promise<unknown> {
    const holders = await this.tools
      .find<KnownTool>(sameNameFilter(tools), {
        collation: NAME_COLLATION,
        projection: { _id: 0, slug: 1, name: 1 },
      })
      .toArray();
    const problems = validateTools(tools, holders).filter(({ field }) => field === 'name');
    return problems.length > 0 ? new InvalidToolsError(problems) : cause;
  }

  private async replaceTools(
    changes: ToolWrites['changes'],
    session: ClientSession,
  ): Promise<void> {
    if (changes.length > 0) await this.tools.bulkWrite(writeOperations(changes), { session });
  }

  async upsert(tools: readonly Tool[]): Promise<ChangeSummary> {
    return this.write(async (session) => {
      const slugs = tools.map((tool) => tool.slug);
      const current = await this.tools
        .find<Tool>(live({ slug: { $in: slugs } }), { projection: TOOL_PROJECTION, session })
        .toArray();
      const writes = planUpsert(new Map(current.map((tool) => [tool.slug, tool])), tools);
      await this.replaceTools(writes.changes, session);
      return writes;
    }, tools);
  }

  async delete(slug: string): Promise<ChangeSummary | null> {
    const summary = await this.write(async (session) => {
      const tool = await this.tools.findOne<Tool>(live({ slug }), {
        projection: TOOL_PROJECTION,
        session,
      });
      const changes: ToolWrites['changes'] = tool
        ? [{ type: 'tool.deleted', slug, name: tool.name }]
        : [];
      await this.replaceTools(changes, session);
      return { changes, unchanged: [] };
    });
    return summary.deleted.length > 0 ? summary : null;
  }

  /**
   * Creates the indexes (marking tools stored before tombstones existed as live first, so that
   * `name_unique` covers them), then inserts the tools whose slug no document holds.
   */
  async seed(tools: readonly Tool[]): Promise<ChangeSummary> {
    await this.tools.updateMany(MARK_LIVE.filter, MARK_LIVE.update);
    await this.tools.createIndexes(TOOL_INDEXES);
    await this.outbox.createIndexes(OUTBOX_INDEXES);
    return this.write(async (session) => {
      if (tools.length === 0) return { changes: [], unchanged: [] };
      const result = await this.tools.bulkWrite(seedOperations(tools), { session });
      return { changes: seededChanges(tools, result.upsertedIds), unchanged: [] };
    }, tools);
  }

  async changesSince(version: number, limit: number): Promise<OutboxEntry[]> {
    // A limit of 0 would mean "no limit" to MongoDB.
    if (limit <= 0) return [];
    const entries = await this.outbox
      .find(changesSinceFilter(version), { projection: { _id: 0 } })
      .sort(OUTBOX_ORDER)
      .limit(limit)
      .toArray();
    return entries.map(fromOutboxDocument);
  }
}
