import type { ChangeTopic } from '../contract';

export type { ChangeTopic };

/**
 * Called with each message published on a topic, by any process. `null` means messages may
 * have been missed (a reconnect, a subscriber that fell behind): forget everything cached.
 */
export type ChangeListener = (message: string | null) => void;

/**
 * The one way changes travel between processes and replicas (docs/architecture.md): key changes,
 * catalog changes and cache invalidation all use it. Redis pub/sub when there is Redis, else
 * a local feed in an SQLite file under DATA_DIR that every process on the machine polls.
 * Delivery is at most once and fast, not durable: what must not be lost (the catalog's change
 * outbox) is stored before it is announced.
 */
export interface ChangeFeed {
  readonly kind: 'redis' | 'local';
  publish(topic: ChangeTopic, message: string): Promise<void>;
  /** Resolves once the subscription is live; returns a function that ends it. */
  subscribe(topic: ChangeTopic, listener: ChangeListener): Promise<() => void>;
  close(): Promise<void>;
}

/** Listeners per topic, shared by both implementations. */
export class ListenerRegistry {
  private readonly byTopic = new Map<ChangeTopic, Set<ChangeListener>>();

  add(topic: ChangeTopic, listener: ChangeListener): () => void {
    let listeners = this.byTopic.get(topic);
    if (!listeners) this.byTopic.set(topic, (listeners = new Set()));
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  emit(topic: ChangeTopic, message: string | null): void {
    for (const listener of this.byTopic.get(topic) ?? []) listener(message);
  }

  emitAll(message: null): void {
    for (const topic of this.byTopic.keys()) this.emit(topic, message);
  }

  topics(): ChangeTopic[] {
    return [...this.byTopic.keys()];
  }
}

/**
 * The warning of a change that is stored but whose announcement failed: not an error, since every
 * process also reads changes from the store itself (`fallback` says how).
 */
export function announcementFailed(err: unknown, fallback: string): string {
  const reason = err instanceof Error ? err.message : String(err);
  return `The change is stored, but announcing it failed (${reason}); ${fallback}`;
}
