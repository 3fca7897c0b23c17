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
  private pending = new Map<string, Counting>();
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
    const query = normalizeQuery(text);
    const id = `${keyId}\n${query}`;
    let tally = this.pending.get(id);
    if (tally === undefined || tally.day !== this.today) {
      if (tally !== undefined) this.pending.delete(id);
      if (this.pending.size >= this.maxPending) {
        this.dropped += 1;
        return;
      }
      tally = { keyId, query, day: this.today, count: 0, noHits: 0, lastAt: 0, lastNoHitAt: 0 };
      this.pending.set(id, tally);
    }
    tally.count += 1;
    tally.lastAt = now;
    if (hits === 0) {
      tally.noHits += 1;
      tally.lastNoHitAt = now;
    }
  }

  private newDay(now: number): void {
    const start = now - (now % DAY_MS);
    this.today = new Date(start).toISOString().slice(0, 10);
    this.todayEnds = start + DAY_MS;
  }

  /** How many tallies wait for the next write. */
  get size(): number {
    return this.pending.size;
  }

  /** Writes what was counted since the last write; one write at a time. */
  flush(): Promise<void> {
    this.writing = this.writing.then(() => this.write());
    return this.writing;
  }

  private async write(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    if (this.dropped > 0) {
      this.options.onDropped?.(this.dropped);
      this.dropped = 0;
    }
    const tallies: SearchTally[] = [];
    for (const t of batch.values()) {
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

const META_TOTAL = Buffer.from('"meta":{"total":');

/**
 * The hit count of a search answer, from its bytes: `meta.total`, which the catalog writes first
 * in `meta`, after the hits. Read without parsing the answer; undefined when it is not there.
 */
export function searchTotal(body: Buffer): number | undefined {
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
