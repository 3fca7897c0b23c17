import { Lru } from 'toad-cache';
import type { KeyStore, SecretMatch } from './key-store';

interface Entry {
  match: SecretMatch;
  expiresAt: number;
  /** The generation it was cached at: older than its key's last change, it is stale. */
  generation: number;
}

export interface KeyCacheOptions {
  ttlMs: number;
  /** Secrets of keys that exist, whatever their state. */
  maxEntries?: number;
  /** "No such key" answers, kept apart: made-up keys never push real ones out. */
  maxUnknownEntries?: number;
  onLookup?: (result: 'hit' | 'miss') => void;
}

/**
 * The gateway's in-process view of the key store: a request never waits on the store for a key
 * it has seen. Entries, including "no such key", are dropped when a change is announced on the
 * change feed or read from the store's change log (followKeyChanges), and expire after `ttlMs`
 * as a safety net. What the cache holds is the store's match of a secret, whatever its state: the
 * state itself (a grace that ran out meanwhile) is secretState's to say at each request. Concurrent
 * misses for one digest share
 * a single store lookup. Anyone can mint well-formed keys (the checksum is
 * public), so "no such key" answers live in a second, smaller LRU, where a flood of them only
 * evicts its own kind.
 */
export class KeyCache {
  private readonly known: Lru<Entry>;
  /** Digest to the time its "no such key" answer expires. */
  private readonly unknown: Lru<number>;
  private readonly inFlight = new Map<string, Promise<SecretMatch | null>>();
  /**
   * Counts invalidations: a lookup that an invalidation overtook may have read the record before
   * the change, so its answer is returned but not kept.
   */
  private generation = 0;
  /**
   * Keys changed within the TTL, and the generation of their change: every secret of such a key
   * cached before it is stale (a roll, a revocation, a new tier), whichever digest it is under.
   * A lookup on an empty map costs next to nothing; changes are rare.
   */
  private readonly changedKeys = new Map<string, { generation: number; at: number }>();
  private readonly ttlMs: number;
  private readonly onLookup: (result: 'hit' | 'miss') => void;

  constructor(
    private readonly store: KeyStore,
    {
      ttlMs,
      maxEntries = 50_000,
      maxUnknownEntries = 10_000,
      onLookup = () => {},
    }: KeyCacheOptions,
  ) {
    this.known = new Lru<Entry>(maxEntries);
    this.unknown = new Lru<number>(maxUnknownEntries);
    this.ttlMs = ttlMs;
    this.onLookup = onLookup;
  }

  /** The cached answer: a match, null for "no such key", undefined when only the store knows. */
  cached(digest: string): SecretMatch | null | undefined {
    const now = Date.now();
    const entry = this.known.get(digest);
    if (entry !== undefined && entry.expiresAt > now) {
      const changed = this.changedKeys.get(entry.match.record.id);
      if (changed === undefined || changed.generation <= entry.generation) {
        this.onLookup('hit');
        return entry.match;
      }
      this.known.delete(digest);
    }
    const unknownUntil = this.unknown.get(digest);
    if (unknownUntil !== undefined && unknownUntil > now) {
      this.onLookup('hit');
      return null;
    }
    return undefined;
  }

  lookup(digest: string): SecretMatch | null | Promise<SecretMatch | null> {
    const cached = this.cached(digest);
    if (cached !== undefined) return cached;
    this.onLookup('miss');
    let pending = this.inFlight.get(digest);
    if (!pending) {
      const generation = this.generation;
      pending = this.store.findByDigest(digest).then(
        (match) => {
          this.inFlight.delete(digest);
          if (generation !== this.generation) return match;
          const expiresAt = Date.now() + this.ttlMs;
          if (match === null) this.unknown.set(digest, expiresAt);
          else this.known.set(digest, { match, expiresAt, generation });
          return match;
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

  /** Drops every cached secret of a key (a roll, a revocation, a new tier). */
  invalidateKey(keyId: string): void {
    this.generation += 1;
    const now = Date.now();
    // A change older than the TTL outlived every entry it could make stale.
    for (const [id, { at }] of this.changedKeys) {
      if (at > now - this.ttlMs) break;
      this.changedKeys.delete(id);
    }
    this.changedKeys.delete(keyId);
    this.changedKeys.set(keyId, { generation: this.generation, at: now });
  }

  invalidate(digest?: string): void {
    this.generation += 1;
    if (digest === undefined) {
      this.known.clear();
      this.unknown.clear();
      this.changedKeys.clear();
    } else {
      this.known.delete(digest);
      this.unknown.delete(digest);
    }
  }
}
