import type { Logger } from 'pino';
import type { ChangeFeed } from '../../../shared/change-feed/change-feed';
import { pollLoop } from '../../../shared/poll-loop';
import type { KeyCache } from './key-cache';
import { decodeKeyChange } from './key-change';
import type { KeyStore } from './key-store';

/**
 * How often each gateway reads the key store's change log: a change then takes effect within a
 * second (the poll, the read and the next request) even when its announcement never came.
 */
export const KEY_CHANGE_POLL_MS = 500;

export interface FollowKeyChangesOptions {
  feed: ChangeFeed;
  store: Pick<KeyStore, 'changesSince'>;
  logger: Pick<Logger, 'warn'>;
  pollMs?: number;
}

/**
 * Keeps the key cache true to the store. Two ways, because either can fail alone: the change feed
 * announces a change at once (when Redis, say, carries it), and the store's own change log, polled
 * every KEY_CHANGE_POLL_MS, brings every committed change whatever happened to its announcement:
 * a CLI that could not reach Redis, a message lost in a reconnect. Returns a function that stops
 * following.
 */
export async function followKeyChanges(
  cache: KeyCache,
  { feed, store, logger, pollMs = KEY_CHANGE_POLL_MS }: FollowKeyChangesOptions,
): Promise<() => void> {
  const stopFeed = await feed.subscribe('keys', (message) => {
    const change = message === null ? undefined : decodeKeyChange(message);
    if (change === undefined) return cache.invalidate();
    cache.invalidate(change.digest);
    cache.invalidateKey(change.keyId);
  });
  let cursor = (await store.changesSince()).cursor;
  const stopPolling = pollLoop(
    async () => {
      const changes = await store.changesSince(cursor);
      if (changes.missed) cache.invalidate();
      else {
        for (const digest of changes.digests) cache.invalidate(digest);
        for (const keyId of changes.keyIds) cache.invalidateKey(keyId);
      }
      cursor = changes.cursor;
    },
    { everyMs: pollMs, logger, failure: 'reading the key change log failed; retrying' },
  );
  return () => {
    stopFeed();
    stopPolling();
  };
}
