import type { Logger } from 'pino';
import type { ChangeFeed } from '../../../shared/change-feed/change-feed';
import { throttledWarning } from '../../../shared/poll-loop';
import type { CatalogReader } from '../store/catalog-store';

export interface FollowOptions {
  /**
   * How often the store is asked for its version besides the feed: a safety net for a missed
   * message, and the only way when the feed cannot reach this replica (MongoDB with no Redis).
   */
  pollMs: number;
  logger: Pick<Logger, 'warn'>;
}

/**
 * Keeps this process on the catalog's latest version: every announcement on the change feed
 * (and every poll) makes the store catch up; the response cache follows the store's version.
 * Returns a function that stops following.
 */
export async function followCatalogChanges(
  store: CatalogReader,
  feed: ChangeFeed,
  { pollMs, logger }: FollowOptions,
): Promise<() => void> {
  let running: Promise<unknown> = Promise.resolve();
  // Polled every pollMs: a store that is away fails every round, logged once a minute.
  const failed = throttledWarning(logger, 'catalog refresh failed; retrying');
  const catchUp = () => {
    // One refresh at a time; announcements that arrive meanwhile are covered by the next one.
    running = running.then(() => store.refresh()).catch(failed);
  };
  const stop = await feed.subscribe('catalog', catchUp);
  const timer = setInterval(catchUp, pollMs).unref();
  return () => {
    stop();
    clearInterval(timer);
  };
}
