import type { Logger } from 'pino';
import { pollLoop } from '../../../shared/poll-loop';
import type { KeyStore, KeyUse } from './key-store';

/** How often the uses noted since are written: well within the minute they are kept to. */
export const LAST_USE_FLUSH_MS = 15_000;

const MINUTE_MS = 60_000;

/**
 * Each key's last use, to the minute (docs/api.md, "Key events and last use"). The request path
 * only notes the minute in memory; every LAST_USE_FLUSH_MS the keys used in a minute not yet
 * written are written in one batch, each a conditional write that only the first replica to
 * report a key's minute makes. So a key costs at most one store write a minute across every
 * replica, and a request never waits on the store.
 */
export class LastUse {
  /** Key id to the start (ms) of the last minute it was used in. */
  private readonly used = new Map<string, number>();
  /** Key id to the last minute written for it from this replica. */
  private readonly written = new Map<string, number>();

  constructor(private readonly clock: () => number = Date.now) {}

  /** On the request path: a Map write, nothing else. */
  note(keyId: string): void {
    const now = this.clock();
    this.used.set(keyId, now - (now % MINUTE_MS));
  }

  /** The last minute this replica saw the key used in, if it did. */
  seen(keyId: string): string | undefined {
    const minute = this.used.get(keyId);
    return minute === undefined ? undefined : new Date(minute).toISOString();
  }

  /** The uses not yet written from this replica; marked written. */
  take(): KeyUse[] {
    const uses: KeyUse[] = [];
    for (const [keyId, minute] of this.used) {
      if (this.written.get(keyId) === minute) continue;
      this.written.set(keyId, minute);
      uses.push({ keyId, minute: new Date(minute).toISOString() });
    }
    // Keys idle for a minute leave memory; their last use is in the store.
    const stale = this.clock() - 2 * MINUTE_MS;
    for (const [keyId, minute] of this.used) {
      if (minute < stale) {
        this.used.delete(keyId);
        this.written.delete(keyId);
      }
    }
    return uses;
  }

  /**
   * Writes the noted uses every LAST_USE_FLUSH_MS, telling `onWritten` how many keys each round
   * wrote; returns a function that stops and writes the rest.
   */
  follow(
    store: Pick<KeyStore, 'recordUse'>,
    {
      logger,
      onWritten = () => {},
      everyMs = LAST_USE_FLUSH_MS,
    }: { logger: Pick<Logger, 'warn'>; onWritten?: (keys: number) => void; everyMs?: number },
  ): () => Promise<void> {
    const write = async () => onWritten(await store.recordUse(this.take()));
    const stop = pollLoop(write, {
      everyMs,
      logger,
      failure: 'writing the keys last use failed; retrying',
    });
    return async () => {
      stop();
      await write().catch(() => undefined);
    };
  }
}
