import { LRUCache } from 'lru-cache';
import { Doorkeeper } from './doorkeeper';

/** What an entry costs besides its body and key: objects, map slots, allocator rounding. */
const ENTRY_OVERHEAD_BYTES = 1024;
/** What one kept header costs: its name and value strings and their pair. */
const HEADER_BYTES = 128;

/** Slots of the table of keys asked once, so that their second request is kept (admission). */
const SEEN_SLOTS = 16_384;

/** A catalog answer kept for every key of one tier. */
export interface CachedAnswer {
  /** The catalog version it was computed at. */
  version: number;
  /** The catalog's headers as relayed to clients, without framing. */
  headers: [string, string | string[]][];
  /** The catalog's Vary, joined to the gateway's on each answer. */
  vary: string | undefined;
  etag: string | undefined;
  body: Buffer;
}

export interface ResponseCacheOptions {
  /** Bytes kept, all entries together, counting each entry's key, headers and overhead. */
  maxBytes: number;
  /** A bigger body is relayed, never kept. */
  maxEntryBytes: number;
  /** Age past which an entry is not served, as a net for a missed announcement; 0: none. */
  ttlMs: number;
  onEvict: () => void;
}

/**
 * The key of an answer: tier, path, query parameters in a stable order (a reordered query is
 * the same request), and Accept-Encoding as sent, since each encoding is a variant of its own
 * with its own ETag, as the catalog keeps them.
 */
export function cacheKey(tier: string, url: string, acceptEncoding: string | undefined): string {
  const query = url.indexOf('?');
  let normalized = url;
  if (query !== -1) {
    const parameters = url.slice(query + 1).split('&');
    if (parameters.length > 1) {
      // Stable: the values of a repeated parameter keep their order.
      parameters.sort((a, b) => {
        const nameA = a.split('=', 1)[0]!;
        const nameB = b.split('=', 1)[0]!;
        return nameA < nameB ? -1 : nameA > nameB ? 1 : 0;
      });
      normalized = `${url.slice(0, query)}?${parameters.join('&')}`;
    }
  }
  return `${tier} ${acceptEncoding ?? ''} ${normalized}`;
}

/**
 * The gateway's cache of the catalog's shared answers, bounded in bytes. It follows the catalog's
 * version, learned from the change feed and from each answer: an entry is served only while its
 * version is the newest known, so after a change no entry of an older version is served, and a
 * newer answer is never followed by an older one from here. An answer is kept from the second
 * request of its key on; concurrent misses of one kept key share one catalog call (single flight).
 */
export class ResponseCache {
  private readonly entries: LRUCache<string, CachedAnswer>;
  private readonly seen = new Doorkeeper(SEEN_SLOTS);
  private readonly inFlight = new Map<string, Promise<CachedAnswer | undefined>>();
  private latest = 0;
  readonly maxEntryBytes: number;

  constructor({ maxBytes, maxEntryBytes, ttlMs, onEvict }: ResponseCacheOptions) {
    this.maxEntryBytes = maxEntryBytes;
    this.entries = new LRUCache<string, CachedAnswer>({
      maxSize: maxBytes,
      // Not the body alone: a small answer costs more in key, headers and bookkeeping than in
      // bytes of body (measured: 64 MiB of 300-byte bodies took 5.4 × 64 MiB of heap).
      sizeCalculation: (entry, key) =>
        entry.body.length + key.length + entry.headers.length * HEADER_BYTES + ENTRY_OVERHEAD_BYTES,
      ...(ttlMs > 0 && { ttl: ttlMs, ttlResolution: 100 }),
      dispose: (_entry, _key, reason) => {
        if (reason === 'evict') onEvict();
      },
    });
  }

  /** The newest catalog version this replica knows of. */
  get version(): number {
    return this.latest;
  }

  /** Learns of a catalog version (an announcement or an answer); older ones change nothing. */
  observe(version: number): void {
    if (version > this.latest) this.latest = version;
  }

  /** An announcement may have been missed: nothing kept can be trusted any more. */
  forget(): void {
    this.entries.clear();
    this.seen.clear();
  }

  get(key: string): CachedAnswer | undefined {
    const entry = this.entries.get(key);
    return entry !== undefined && entry.version === this.latest ? entry : undefined;
  }

  /** Keeps an answer unless it is older than the newest version known. */
  set(key: string, answer: CachedAnswer): void {
    this.observe(answer.version);
    if (answer.version === this.latest) this.entries.set(key, answer);
  }

  /**
   * Whether a missed key's answer is worth keeping: only from its second request on, as nginx's
   * `proxy_cache_min_uses 2`. A URL asked once (a crawler, a one-off search) is relayed and
   * never pushes a repeated one out, and costs no copy of its body.
   */
  admit(key: string): boolean {
    return this.seen.seenBefore(key);
  }

  /**
   * The answer of a concurrent miss of the same key, when one is under way: undefined when
   * none is, or when it ended without a shareable answer.
   */
  pending(key: string): Promise<CachedAnswer | undefined> | undefined {
    return this.inFlight.get(key);
  }

  /** Runs the one catalog call for a key; concurrent misses wait on `pending`. */
  async fill<T>(
    key: string,
    fetch: (share: (answer: CachedAnswer | undefined) => void) => Promise<T>,
  ): Promise<T> {
    let share!: (answer: CachedAnswer | undefined) => void;
    this.inFlight.set(key, new Promise((resolve) => (share = resolve)));
    try {
      return await fetch(share);
    } finally {
      share(undefined);
      this.inFlight.delete(key);
    }
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.entries.calculatedSize };
  }
}
