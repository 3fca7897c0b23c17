import type { Logger } from 'pino';
import { throttledWarning } from '../../../shared/poll-loop';
import {
  SEARCH_ANALYTICS_RETENTION_DAYS,
  type SearchAnalyticsStore,
  type SearchTally,
} from './search-analytics-store';

const DAY_MS = 86_400_000;

/**
 * A query as analytics compare it: trimmed, runs of white space made one space,
 * lower-cased. The catalog's own rule for the text it searches does the NFC.
 */
export function normalizeQuery(text: string): string {
  return text.normalize('NFC').trim().replace(/\s+/g, ' ').toLowerCase();
}

/** A tally being counted: its instants kept as numbers until the batch is written. */
interface Counting {
  keyId: string;
  query: string;
  day: string;
  count: number;
  noHits: number;
  lastAt: number;
  lastNoHitAt: number;
}

/** The route whose answers the search analytics count. */
export const SEARCH_ROUTE = '/v1/search';

export interface SearchRecorderOptions {
  store: SearchAnalyticsStore;
  /** How often a batch is written; a full batch is written at once. */
  flushMs: number;
  /** The distinct (key, query, day) a batch holds at most: memory stays bounded. */
  maxPending?: number;
  clock?: () => number;
  logger: Pick<Logger, 'warn'>;
  /** Told how many searches a full batch left out. */
  onDropped?: (searches: number) => void;
}

/**
 * Counts searches off the request path (docs/api.md#search-analytics): a search adds to a tally
 * in memory, and the tallies go to the store as one write every `flushMs` (one transaction on
 * keys.db, one bulk write on MongoDB). A flood of distinct queries fills at most `maxPending`
 * tallies; what comes past that before the next write is counted as dropped, never kept. A failed
 * write is logged (throttled) and its batch given up: analytics never hold a request up.
 */
export class SearchRecorder {
  /** Tallies by key, then by normalised query. */
  private pending = new Map<string, Map<string, Counting>>();
  private pendingCount = 0;
  /** The normalised form of query texts seen lately: a repeated search does not redo it. */
  private readonly normalized = new Map<string, string>();
  private readonly maxPending: number;
  private readonly clock: () => number;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private dropped = 0;
  private readonly warn: (err: unknown) => void;
  /** Today's UTC date and when it ends: a search does not format a date. */
  private today = '';
  private todayEnds = 0;
  private prunedDay = '';

  constructor(private readonly options: SearchRecorderOptions) {
    this.maxPending = options.maxPending ?? 10_000;
    this.clock = options.clock ?? Date.now;
    this.warn = throttledWarning(options.logger, 'writing search analytics failed');
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), this.options.flushMs).unref();
  }

  /**
   * A search answered: counted when it is a 200 for a query text (REST `/v1/search`, MCP
   * tool that mirrors it), its hits read from the answer's bytes (not known for a streamed answer).
   */
  recordAnswer(keyId: string, text: unknown, status: number, body: unknown): void {
    if (status !== 200 || typeof text !== 'string') return;
    this.record(keyId, text, Buffer.isBuffer(body) ? searchTotal(body) : undefined);
  }

  /** A search of `keyId` for `text` that found `hits` (undefined: not known). */
  record(keyId: string, text: string, hits: number | undefined): void {
    const now = this.clock();
    if (now >= this.todayEnds) this.newDay(now);
    let query = this.normalized.get(text);
    if (query === undefined) {
      if (this.normalized.size >= NORMALIZED_KEPT) this.normalized.clear();
      query = normalizeQuery(text);
      this.normalized.set(text, query);
    }
    let queries = this.pending.get(keyId);
    let tally = queries?.get(query);
    if (tally === undefined) {
      if (this.pendingCount >= this.maxPending) {
        this.dropped += 1;
        return;
      }
      this.pendingCount += 1;
      if (queries === undefined) this.pending.set(keyId, (queries = new Map()));
      tally = { keyId, query, day: this.today, count: 0, noHits: 0, lastAt: 0, lastNoHitAt: 0 };
      queries.set(query, tally);
    }
    tally.count += 1;
    tally.lastAt = now;
    if (hits === 0) {
      tally.noHits += 1;
      tally.lastNoHitAt = now;
    }
  }

  /** At midnight (UTC) the day's tallies go to be written: what follows is the next day's. */
  private newDay(now: number): void {
    if (this.pendingCount > 0) void this.flush();
    const start = now - (now % DAY_MS);
    this.today = new Date(start).toISOString().slice(0, 10);
    this.todayEnds = start + DAY_MS;
  }

  /** How many tallies wait for the next write. */
  get size(): number {
    return this.pendingCount;
  }

  /** Writes what was counted since the last write; one write at a time. */
  flush(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    this.pendingCount = 0;
    if (this.dropped > 0) {
      this.options.onDropped?.(this.dropped);
      this.dropped = 0;
    }
    this.writing = this.writing.then(() => this.write(batch));
    return this.writing;
  }

  private async write(batch: Map<string, Map<string, Counting>>): Promise<void> {
    const tallies: SearchTally[] = [];
    for (const t of [...batch.values()].flatMap((queries) => [...queries.values()])) {
      tallies.push({
        keyId: t.keyId,
        query: t.query,
        day: t.day,
        count: t.count,
        noHits: t.noHits,
        lastAt: new Date(t.lastAt).toISOString(),
        lastNoHitAt: t.noHits > 0 ? new Date(t.lastNoHitAt).toISOString() : null,
      });
    }
    try {
      await this.options.store.add(tallies);
      await this.prune();
    } catch (err) {
      this.warn(err);
    }
  }

  /** Once a day: the days past the retention go. */
  private async prune(): Promise<void> {
    const cutoff = new Date(this.clock() - SEARCH_ANALYTICS_RETENTION_DAYS * DAY_MS)
      .toISOString()
      .slice(0, 10);
    if (cutoff === this.prunedDay) return;
    await this.options.store.prune(cutoff);
    this.prunedDay = cutoff;
  }

  /** Stops the timer and writes what is left. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}

/** How many query texts keep their normalised form at hand. */
const NORMALIZED_KEPT = 4_096;

const META_TOTAL = Buffer.from('"meta":{"total":');
/** A cached answer is the same bytes for every hit: its count is read once. */
const TOTALS = new WeakMap<Buffer, number | undefined>();

/**
 * The hit count of a search answer, from its bytes: `meta.total`, which the catalog writes first
 * in `meta`, after the hits. Read without parsing the answer; undefined when it is not there.
 */
export function searchTotal(body: Buffer): number | undefined {
  if (TOTALS.has(body)) return TOTALS.get(body);
  const total = readTotal(body);
  TOTALS.set(body, total);
  return total;
}

function readTotal(body: Buffer): number | undefined {
  const at = body.lastIndexOf(META_TOTAL);
  if (at < 0) return undefined;
  let total = 0;
  let i = at + META_TOTAL.length;
  const start = i;
  for (; i < body.length; i++) {
    const digit = body[i]! - 48;
    if (digit < 0 || digit > 9) break;
    total = total * 10 + digit;
  }
  return i > start ? total : undefined;
}
