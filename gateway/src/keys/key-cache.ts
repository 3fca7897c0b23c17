import { Lru } from 'toad-cache';
import type { KeyRecord, KeyStore } from './key-store';

interface Entry {
  record: KeyRecord | null;
  expiresAt: number;
}

export interface KeyCacheOptions {
  ttlMs: number;
  maxEntries?: number;
  onLookup?: (result: 'hit' | 'miss') => void;
}

/**
 * The gateway's in-process view of the key store: a request never waits on the store for a key
 * it has seen. Entries, including "no such key", are dropped when a change is announced (Redis
 * pub/sub or the key file's watcher) and expire after `ttlMs` as a safety net. Concurrent misses
 * for one digest share a single store lookup.
 */
export class KeyCache {
  private readonly entries: Lru<Entry>;
  private readonly inFlight = new Map<string, Promise<KeyRecord | null>>();
  private readonly ttlMs: number;
  private readonly onLookup: (result: 'hit' | 'miss') => void;

  constructor(
    private readonly store: KeyStore,
    { ttlMs, maxEntries = 50_000, onLookup = () => {} }: KeyCacheOptions,
  ) {
    this.entries = new Lru<Entry>(maxEntries);
    this.ttlMs = ttlMs;
    this.onLookup = onLookup;
  }

  lookup(digest: string): KeyRecord | null | Promise<KeyRecord | null> {
    const entry = this.entries.get(digest);
    if (entry !== undefined && entry.expiresAt > Date.now()) {
      this.onLookup('hit');
      return entry.record;
    }
    this.onLookup('miss');
    let pending = this.inFlight.get(digest);
    if (!pending) {
      pending = this.store.findByDigest(digest).then(
        (record) => {
          this.inFlight.delete(digest);
          this.entries.set(digest, { record, expiresAt: Date.now() + this.ttlMs });
          return record;
        },
        (err: unknown) => {
          this.inFlight.delete(digest);
          throw err;
        },
      );
      this.inFlight.set(digest, pending);
    }
    return pending;
  }

  invalidate(digest?: string): void {
    if (digest === undefined) this.entries.clear();
    else this.entries.delete(digest);
  }
}
