import { setTimeout as sleep } from 'node:timers/promises';
import type { ClientSession, Collection, Db, MongoClient } from 'mongodb';
import { connectMongo } from '../../../shared/mongo';
import { InvalidToolsError, type KnownTool, validateTools } from '../records/tool-validator';
import type { Category, Tool, ToolRecord } from '../schemas/tool';
import type {
  CatalogStore,
  ChangeLogPage,
  ChangeLogQuery,
  ChangeSummary,
  OutboxEntry,
  Page,
  PlannedChange,
  SearchEngine,
  SearchPage,
  SearchRequest,
  ToolChange,
  ToolQuery,
} from './catalog-store';
import {
  CATEGORY_PIPELINE,
  COUNTERS_COLLECTION,
  type CounterDocument,
  HISTORY_COLLECTION,
  HISTORY_INDEXES,
  type HistoryDocument,
  NEWEST_FIRST,
  PRUNED_COUNTER,
  MARK_LIVE,
  NAME_COLLATION,
  OUTBOX_COLLECTION,
  OUTBOX_INDEXES,
  OUTBOX_ORDER,
  type OutboxDocument,
  type PlannedWrites,
  type StoredDocument,
  TEXT_SCORE_PROJECTION,
  TOOL_INDEXES,
  TOOL_PROJECTION,
  TOOLS_COLLECTION,
  TRANSACTION_OPTIONS,
  UNSTAMPED,
  VERSION_COUNTER,
  changesSinceFilter,
  claimUpdate,
  claimedInstants,
  fromOutboxDocument,
  historyFilter,
  isDuplicateName,
  knownSlugsFilter,
  live,
  outboxDocuments,
  pageFilter,
  planSeed,
  planUpsert,
  prefixFallbackFilter,
  prunedFilter,
  prunedUpdate,
  seedOperations,
  sameNameFilter,
  stampOperations,
  summarize,
  textSearchFilter,
  toolFilter,
  toolSort,
  writeOperations,
  writtenBefore,
} from './mongo-queries';
import { type HistoryEntry, historyEntries, historyFromOutbox } from './tool-history';
import { stampChange } from './change-clock';
import { countCategoriesFromCounts } from './query-semantics';
import {
  type AtlasFacets,
  RANK_PROJECTION,
  SEARCH_INDEX_NAME,
  SYNONYMS_COLLECTION,
  type SearchIndexState,
  atlasCandidatesPipeline,
  atlasFacetsPipeline,
  facetCounts,
  definitionHolds,
  searchIndexDefinition,
  synonymWrites,
} from './search/atlas-search';
import {
  type Candidate,
  type RankedHit,
  TermMatcher,
  categoryFacets,
  categoryFilter,
  isExactName,
  rankCandidates,
  searchResult,
} from './search/ranking';
import { type SearchPlan, planSearch } from './search/search-plan';
import { type Synonyms, bundledSynonyms } from './search/synonyms';
import { toolTerms } from './search/tool-terms';

/** `SEARCH_ENGINE`: Atlas Search when the cluster has it (`auto`), always (`atlas`), or never. */
export type SearchEngineSetting = 'auto' | 'atlas' | 'text';

export interface MongoStoreOptions {
  searchEngine?: SearchEngineSetting;
  /** Where search-index progress is told (the seed prints it). */
  log?: (message: string) => void;
  /** How long the seed waits for a new search index to become queryable. */
  searchIndexWaitMs?: number;
}

/** A tool as ranked: the fields of RANK_PROJECTION. */
type RankedTool = Pick<Tool, 'slug' | 'name' | 'category' | 'description' | 'tags' | 'reviews'>;

/** How often a store without a queryable search index looks again (`auto`, `atlas`). */
const SEARCH_INDEX_RECHECK_MS = 30_000;
const SEARCH_INDEX_POLL_MS = 2_000;
const NAMESPACE_NOT_FOUND = 26;
const DUPLICATE_KEY = 11000;

function noAtlasSearch(reason: string): Error {
  return new Error(`SEARCH_ENGINE=atlas, but this MongoDB has no Atlas Search: ${reason}`);
}

/**
 * The MongoDB store: a thin adapter that sends the documents of mongo-queries.ts. Used when
 * MONGODB_URI is set; `npm run seed` fills it. Each write runs in one transaction with its
 * outbox entries and the version counter, so MongoDB must be a replica set (checked at connect).
 */
export class MongoStore implements CatalogStore {
  readonly kind = 'mongodb';
  private knownVersion = 0;
  private readonly synonyms: Synonyms = bundledSynonyms();
  /** The engine `/search` uses now (see `searchEngine`). */
  private engine: 'atlas' | 'text' = 'text';
  /** When to look for a queryable search index again (never with `SEARCH_ENGINE=text`). */
  private recheckAt = Number.POSITIVE_INFINITY;
  /** What the last seed found or made of the search index. */
  searchIndex: SearchIndexState | { status: 'skipped'; reason: string } | undefined;

  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    private readonly tools: Collection<StoredDocument>,
    private readonly outbox: Collection<OutboxDocument>,
    private readonly history: Collection<HistoryDocument>,
    private readonly counters: Collection<CounterDocument>,
    private readonly options: Required<MongoStoreOptions>,
  ) {}

  static async connect(
    uri: string,
    dbName: string,
    options: MongoStoreOptions = {},
  ): Promise<MongoStore> {
    const client = await connectMongo(uri, 'tool-directory-catalog', { transactions: true });
    const db = client.db(dbName);
    const store = new MongoStore(
      client,
      db,
      // Like the embedded store's JSON: an absent field stays absent, never null.
      db.collection<StoredDocument>(TOOLS_COLLECTION, { ignoreUndefined: true }),
      db.collection<OutboxDocument>(OUTBOX_COLLECTION, { ignoreUndefined: true }),
      db.collection<HistoryDocument>(HISTORY_COLLECTION),
      db.collection<CounterDocument>(COUNTERS_COLLECTION),
      { searchEngine: 'auto', log: () => {}, searchIndexWaitMs: 300_000, ...options },
    );
    try {
      await store.refresh();
      await store.chooseSearchEngine();
    } catch (err) {
      await client.close();
      throw err;
    }
    return store;
  }

  /** `$search` when the search index answers; otherwise `$text` (docs/api.md, "Search"). */
  get searchEngine(): SearchEngine {
    return this.engine;
  }

  /**
   * The search index's state, or why the cluster has no Atlas Search: `listSearchIndexes`
   * fails on a MongoDB without it (a plain mongod or replica set).
   */
  private async searchIndexState(): Promise<
    { supported: true; index?: SearchIndexState } | { supported: false; reason: string }
  > {
    try {
      const [index] = await this.tools.listSearchIndexes(SEARCH_INDEX_NAME).toArray();
      return { supported: true, index: index as SearchIndexState | undefined };
    } catch (err) {
      // No `tools` collection yet (before the first seed): nothing to list, Atlas or not.
      if ((err as { code?: unknown }).code === NAMESPACE_NOT_FOUND) return { supported: true };
      return { supported: false, reason: (err as Error).message };
    }
  }

  /** Picks the engine by `SEARCH_ENGINE` and what the cluster has; `atlas` without it fails. */
  private async chooseSearchEngine(): Promise<void> {
    if (this.options.searchEngine === 'text') return;
    const state = await this.searchIndexState();
    if (state.supported && state.index?.queryable) {
      this.engine = 'atlas';
      return;
    }
    if (!state.supported && this.options.searchEngine === 'atlas') {
      throw noAtlasSearch(state.reason);
    }
    // A cluster may gain Atlas Search, a seed the index: looked for again now and then.
    this.recheckAt = Date.now() + SEARCH_INDEX_RECHECK_MS;
    this.options.log(
      state.supported
        ? `search: $text until the search index '${SEARCH_INDEX_NAME}' is queryable (npm run seed creates it)`
        : `search: $text (no Atlas Search on this MongoDB: ${state.reason})`,
    );
  }

  /** A store waiting for its search index looks again now and then, between searches. */
  private async recheckSearchIndex(): Promise<void> {
    if (Date.now() < this.recheckAt) return;
    this.recheckAt = Date.now() + SEARCH_INDEX_RECHECK_MS;
    const state = await this.searchIndexState();
    if (state.supported && state.index?.queryable) {
      this.engine = 'atlas';
      this.recheckAt = Number.POSITIVE_INFINITY;
    }
  }

  /**
   * Creates the search index of `data/atlas-search-index.json` (or updates it when the file
   * changed) and its synonyms collection, then waits until it is queryable, at most
   * `searchIndexWaitMs`. Nothing to do for `SEARCH_ENGINE=text` or without Atlas Search.
   */
  async ensureSearchIndex(): Promise<SearchIndexState | { status: 'skipped'; reason: string }> {
    const { searchEngine, log, searchIndexWaitMs } = this.options;
    if (searchEngine === 'text') return { status: 'skipped', reason: 'SEARCH_ENGINE=text' };
    const state = await this.searchIndexState();
    if (!state.supported) {
      if (searchEngine === 'atlas') throw noAtlasSearch(state.reason);
      log(`search index: skipped, this MongoDB has no Atlas Search (${state.reason})`);
      return { status: 'skipped', reason: 'no Atlas Search' };
    }
    await this.db.collection(SYNONYMS_COLLECTION).bulkWrite(synonymWrites(this.synonyms));
    const definition = searchIndexDefinition();
    if (!state.index) {
      log(`search index: creating '${SEARCH_INDEX_NAME}'`);
      await this.tools.createSearchIndex({ name: SEARCH_INDEX_NAME, type: 'search', definition });
    } else if (!definitionHolds(state.index.latestDefinition, definition)) {
      log(`search index: updating '${SEARCH_INDEX_NAME}' to data/atlas-search-index.json`);
      await this.tools.updateSearchIndex(SEARCH_INDEX_NAME, definition);
    }
    const deadline = Date.now() + searchIndexWaitMs;
    let last = '';
    for (;;) {
      const now = await this.searchIndexState();
      const index = now.supported ? now.index : undefined;
      if (index?.queryable && index.status === 'READY') {
        log(`search index: '${SEARCH_INDEX_NAME}' is ready`);
        this.engine = 'atlas';
        this.recheckAt = Number.POSITIVE_INFINITY;
        return index;
      }
      const status = index?.status ?? 'not listed yet';
      if (status !== last) log(`search index: ${status}, waiting`);
      last = status;
      if (Date.now() >= deadline) {
        log(
          `search index: not ready after ${Math.round(searchIndexWaitMs / 1000)} s (status ${status}); ` +
            '/search uses $text until it is, and switches by itself',
        );
        return index ?? { name: SEARCH_INDEX_NAME, status };
      }
      await sleep(SEARCH_INDEX_POLL_MS);
    }
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

  async search({ text, limit, category }: SearchRequest): Promise<SearchPage> {
    // For the searches after this one: none waits for the look.
    void this.recheckSearchIndex().catch(() => undefined);
    const plan = planSearch(text, this.synonyms);
    if (plan.words.length === 0) return { items: [], total: 0, facets: { category: [] } };
    const { items, total, facets } =
      this.engine === 'atlas'
        ? await this.atlasSearch(text, plan, limit, category)
        : await this.textSearch(plan, limit, category);
    return { items: await this.fullRecords(items), total, facets: { category: facets } };
  }

  /** A candidate of an engine that does not say what matched: ranked from all its terms. */
  private candidate(tool: RankedTool, engineScore: number, plan: SearchPlan, matcher: TermMatcher) {
    return {
      tool,
      engineScore,
      matches: matcher.fromTerms(toolTerms(tool, this.synonyms)),
      exact: isExactName(tool, plan),
    } satisfies Candidate<RankedTool>;
  }

  /** `$text` and the prefix fallback find every hit; all are ranked and counted here. */
  private async textSearch(plan: SearchPlan, limit: number, category?: string) {
    const [textHits, prefixHits] = await Promise.all([
      this.tools
        .find<RankedTool & { score: number }>(textSearchFilter(plan, this.synonyms), {
          projection: TEXT_SCORE_PROJECTION,
        })
        .toArray(),
      this.tools
        .find<RankedTool>(prefixFallbackFilter(plan), { projection: RANK_PROJECTION })
        .toArray(),
    ]);
    const matcher = new TermMatcher(plan);
    const candidates = new Map<string, Candidate<RankedTool>>();
    for (const { score, ...tool } of textHits) {
      candidates.set(tool.slug, this.candidate(tool, score, plan, matcher));
    }
    for (const tool of prefixHits) {
      if (!candidates.has(tool.slug))
        candidates.set(tool.slug, this.candidate(tool, 0, plan, matcher));
    }
    const result = searchResult([...candidates.values()], plan, { limit, category });
    return { ...result, facets: result.facets.category };
  }

  /**
   * `$search` finds the best candidates (in the category asked for) and `$searchMeta` counts
   * every match by category, both at once; the candidates are ranked here.
   */
  private async atlasSearch(text: string, plan: SearchPlan, limit: number, category?: string) {
    const [found, [meta]] = await Promise.all([
      this.tools
        .aggregate<RankedTool & { score: number }>(atlasCandidatesPipeline(text, plan, category))
        .toArray(),
      this.tools.aggregate<AtlasFacets>(atlasFacetsPipeline(text, plan)).toArray(),
    ]);
    const matcher = new TermMatcher(plan);
    const candidates = found.map(({ score, ...tool }) =>
      this.candidate(tool, score, plan, matcher),
    );
    const inCategory = categoryFilter(category);
    const { items } = rankCandidates(candidates, plan, limit, inCategory);
    const counts = facetCounts(meta);
    const total =
      category === undefined
        ? (meta?.count?.total ?? 0)
        : counts
            .filter(([name]) => inCategory({ category: name }))
            .reduce((sum, [, count]) => sum + count, 0);
    return { items, total, facets: categoryFacets(counts) };
  }

  /** The page's hits as full records, in rank order. */
  private async fullRecords(hits: RankedHit<RankedTool>[]) {
    if (hits.length === 0) return [];
    const records = await this.tools
      .find<Tool>(pageFilter(hits.map((hit) => hit.tool.slug)), { projection: TOOL_PROJECTION })
      .toArray();
    const bySlug = new Map(records.map((tool) => [tool.slug, tool]));
    // A tool deleted between the two reads drops out of the page.
    return hits.flatMap(({ tool, score }) => {
      const record = bySlug.get(tool.slug);
      return record ? [{ ...record, score }] : [];
    });
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

  /** Claims versions and instants on the counter (claimUpdate), in the session's transaction. */
  private async claim(versions: number, instants: number, session: ClientSession) {
    const counter = await this.counters.findOneAndUpdate(
      VERSION_COUNTER,
      claimUpdate(versions, instants),
      { upsert: true, returnDocument: 'after', session },
    );
    return { version: counter!.value, instants: claimedInstants(counter!, instants) };
  }

  /**
   * Plans a write and makes it in one transaction: one claim on the counter for the versions and
   * instants of all its changes, the tool writes (`apply`, given the changes with their
   * instants) and their outbox entries. A write that changes nothing writes nothing, not even
   * the counter.
   */
  private async transaction(
    plan: (session: ClientSession) => Promise<PlannedWrites>,
    apply: (changes: readonly ToolChange[], session: ClientSession) => Promise<unknown>,
  ): Promise<PlannedWrites & { version?: number }> {
    const at = new Date().toISOString();
    return this.client.withSession((session) =>
      session.withTransaction(async () => {
        const planned = await plan(session);
        const count = planned.changes.length;
        if (count === 0) return planned;
        const { version, instants } = await this.claim(count, count, session);
        const changes = planned.changes.map((change, i) => stampChange(change, instants[i]!));
        await apply(changes, session);
        await this.outbox.insertMany(outboxDocuments(changes, version, at), { session });
        const history = historyEntries(changes, planned.before ?? new Map(), version, at);
        await this.history.insertMany(history, { session });
        return { ...planned, version };
      }, TRANSACTION_OPTIONS),
    );
  }

  /** `written`: the records of an upsert or seed, to name the one a duplicate name refused. */
  private async write(
    plan: (session: ClientSession) => Promise<PlannedWrites>,
    apply: (changes: readonly ToolChange[], session: ClientSession) => Promise<unknown>,
    written: readonly ToolRecord[] = [],
  ): Promise<ChangeSummary> {
    const result = await this.transaction(plan, apply).catch(async (err: unknown) => {
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
  private async nameConflict(tools: readonly ToolRecord[], cause: unknown): Promise<unknown> {
    const holders = await this.tools
      .find<KnownTool>(sameNameFilter(tools), {
        collation: NAME_COLLATION,
        projection: { _id: 0, slug: 1, name: 1 },
      })
      .toArray();
    const problems = validateTools(tools, holders).filter(({ field }) => field === 'name');
    return problems.length > 0 ? new InvalidToolsError(problems) : cause;
  }

  private async replaceTools(changes: readonly ToolChange[], session: ClientSession) {
    await this.tools.bulkWrite(writeOperations(changes), { session });
  }

  async upsert(tools: readonly ToolRecord[]): Promise<ChangeSummary> {
    return this.write(
      async (session) => {
        const slugs = tools.map((tool) => tool.slug);
        const current = await this.tools
          .find<Tool>(live({ slug: { $in: slugs } }), { projection: TOOL_PROJECTION, session })
          .toArray();
        const before = new Map(current.map((tool) => [tool.slug, tool]));
        return { ...planUpsert(before, tools), before };
      },
      (changes, session) => this.replaceTools(changes, session),
      tools,
    );
  }

  async delete(slug: string): Promise<ChangeSummary | null> {
    const summary = await this.write(
      async (session) => {
        const tool = await this.tools.findOne<Tool>(live({ slug }), {
          projection: TOOL_PROJECTION,
          session,
        });
        const changes: PlannedChange[] = tool
          ? [{ type: 'tool.deleted', slug, name: tool.name }]
          : [];
        return { changes, unchanged: [] };
      },
      (changes, session) => this.replaceTools(changes, session),
    );
    return summary.deleted.length > 0 ? summary : null;
  }

  /**
   * Creates the indexes (marking tools stored before tombstones existed as live first, so that
   * `name_unique` covers them), stamps the tools stored before `updatedAt` existed, then
   * inserts the tools whose slug no document holds.
   */
  async seed(tools: readonly ToolRecord[]): Promise<ChangeSummary> {
    await this.tools.updateMany(MARK_LIVE.filter, MARK_LIVE.update);
    await this.tools.createIndexes(TOOL_INDEXES);
    await this.outbox.createIndexes(OUTBOX_INDEXES);
    await this.history.createIndexes(HISTORY_INDEXES);
    await this.historyOfOutbox();
    await this.stampUnstamped();
    const summary = await this.write(
      async (session) => {
        const known = await this.tools
          .find<{ slug: string }>(knownSlugsFilter(tools), {
            projection: { _id: 0, slug: 1 },
            session,
          })
          .toArray();
        return planSeed(tools, new Set(known.map((document) => document.slug)));
      },
      // A tool another writer inserts meanwhile conflicts with this transaction, which then
      // runs again and finds it known: every insert planned is an insert made.
      (changes, session) =>
        this.tools.bulkWrite(
          seedOperations(
            changes.flatMap((change) => (change.type === 'tool.created' ? [change.tool] : [])),
          ),
          { session },
        ),
      tools,
    );
    // After the tools, so that a new index's first build holds them all.
    this.searchIndex = await this.ensureSearchIndex();
    return summary;
  }

  /**
   * Gives each live tool stored before `updatedAt` existed an instant, by slug, in one
   * transaction that also takes a catalog version (with no outbox entry: the content did not
   * change), so that every cache drops the records it served without one.
   */
  private async stampUnstamped(): Promise<void> {
    const version = await this.client.withSession((session) =>
      session.withTransaction(async () => {
        const unstamped = await this.tools
          .find<{ slug: string }>(UNSTAMPED, {
            projection: { _id: 0, slug: 1 },
            sort: { slug: 1 },
            session,
          })
          .toArray();
        if (unstamped.length === 0) return undefined;
        const slugs = unstamped.map((document) => document.slug);
        const claimed = await this.claim(1, slugs.length, session);
        await this.tools.bulkWrite(stampOperations(slugs, claimed.instants), { session });
        return claimed.version;
      }, TRANSACTION_OPTIONS),
    );
    if (version !== undefined) this.knownVersion = Math.max(this.knownVersion, version);
  }

  /**
   * Fills the history of a store that had an outbox before it had a history. An entry a writer
   * adds meanwhile is already there (its version is unique): left as it is.
   */
  private async historyOfOutbox(): Promise<void> {
    const [kept, known] = await Promise.all([
      this.outbox.estimatedDocumentCount(),
      this.history.estimatedDocumentCount(),
    ]);
    if (known >= kept) return;
    const entries = await this.outbox
      .find({}, { projection: { _id: 0 } })
      .sort(OUTBOX_ORDER)
      .toArray();
    await this.history
      .insertMany(historyFromOutbox(entries.map(fromOutboxDocument)), { ordered: false })
      .catch((err: unknown) => {
        const errors = (err as { writeErrors?: { code?: number }[] }).writeErrors;
        if (!errors?.every((e) => e.code === DUPLICATE_KEY)) throw err;
      });
  }

  private async prunedThrough(): Promise<number> {
    return (await this.counters.findOne(PRUNED_COUNTER))?.value ?? 0;
  }

  /** The last outbox version written before `keptFrom`; 0 if none. */
  private async lastVersionBefore(keptFrom: string): Promise<number> {
    const last = await this.outbox.findOne(writtenBefore(keptFrom), {
      sort: NEWEST_FIRST,
      projection: { _id: 0, version: 1 },
    });
    return last?.version ?? 0;
  }

  async changeLog({ after, keptFrom, limit }: ChangeLogQuery): Promise<ChangeLogPage> {
    // Read before the page: a change the page misses has a later version.
    const latest = await this.refresh();
    const pruned = await this.prunedThrough();
    let from: number;
    if (after === undefined) {
      from = Math.max(pruned, await this.lastVersionBefore(keptFrom));
    } else {
      const next = await this.outbox.findOne(changesSinceFilter(after), {
        sort: OUTBOX_ORDER,
        projection: { _id: 0, at: 1 },
      });
      if (after < pruned || after > latest || (next !== null && next.at < keptFrom)) {
        return { gone: true };
      }
      from = after;
    }
    const entries = await this.changesSince(from, limit);
    // A prune between the reads may have taken entries after `from`.
    if ((await this.prunedThrough()) > from) return { gone: true };
    return { gone: false, after: from, entries, latest };
  }

  async pruneChanges(keptFrom: string): Promise<number> {
    const newest = await this.outbox.findOne(
      {},
      { sort: NEWEST_FIRST, projection: { version: 1 } },
    );
    // The newest entry stays, as in the embedded store, whose outbox holds its version.
    const until = Math.min(await this.lastVersionBefore(keptFrom), (newest?.version ?? 0) - 1);
    if (until <= 0) return 0;
    // The mark first: a reader never takes a gap for a complete page.
    await this.counters.updateOne(PRUNED_COUNTER, prunedUpdate(until), { upsert: true });
    return (await this.outbox.deleteMany(prunedFilter(until))).deletedCount;
  }

  async toolHistory(slug: string): Promise<HistoryEntry[] | null> {
    const entries = await this.history
      .find(historyFilter(slug), { projection: { _id: 0 } })
      .sort(NEWEST_FIRST)
      .toArray();
    if (entries.length > 0) return entries;
    // Tombstones included: a slug the catalog held has a (possibly empty) history.
    const held = await this.tools.findOne({ slug }, { projection: { _id: 0, slug: 1 } });
    return held ? [] : null;
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
