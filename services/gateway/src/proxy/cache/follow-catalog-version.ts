import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { ChangeFeed } from '../../../../shared/change-feed/change-feed';
import { INTERNAL_HEADERS, INTERNAL_PATHS } from '../../../../shared/contract';
import { pollLoop } from '../../../../shared/poll-loop';
import type { ResponseCache } from './response-cache';

/**
 * How often each gateway asks the catalog for its version: a change then stops being served from
 * the response cache within a second even when its announcement never came (a CLI killed after its
 * commit, Redis down).
 */
export const CATALOG_VERSION_POLL_MS = 500;

/**
 * What the follower needs of the gateway's catalog client: one GET and its answer. Declared here
 * so that the cache does not import the proxy above it; the proxy's CatalogClient fits it.
 */
export interface VersionSource {
  call(call: {
    method: 'GET';
    path: string;
    headers: Record<string, string>;
  }): Promise<{ statusCode: number; body: Buffer | Readable }>;
}

export interface FollowCatalogVersionOptions {
  feed: ChangeFeed;
  catalog: VersionSource;
  internalToken: string;
  logger: Pick<Logger, 'warn'>;
  pollMs?: number;
}

/**
 * Keeps the response cache on the catalog's newest version, two ways, because either can fail
 * alone: the change feed announces each change at once, and the catalog itself, asked every
 * CATALOG_VERSION_POLL_MS, tells the version it serves after catching up with its store. A feed
 * that may have missed messages (a reconnect) empties the cache. Returns a function that stops.
 */
export async function followCatalogVersion(
  cache: ResponseCache,
  {
    feed,
    catalog,
    internalToken,
    logger,
    pollMs = CATALOG_VERSION_POLL_MS,
  }: FollowCatalogVersionOptions,
): Promise<() => void> {
  const stopFeed = await feed.subscribe('catalog', (version) =>
    version === null ? cache.forget() : cache.observe(Number(version)),
  );
  const call = {
    method: 'GET' as const,
    path: INTERNAL_PATHS.catalogVersion,
    headers: { [INTERNAL_HEADERS.token]: internalToken },
  };
  // A catalog that cannot answer serves nothing newer either; its requests fail alike.
  const stopPolling = pollLoop(
    async () => {
      const { statusCode, body } = await catalog.call(call);
      if (statusCode !== 200 || !Buffer.isBuffer(body)) {
        // A streamed body is let go of unread: destroying it aborts the call.
        if (!Buffer.isBuffer(body)) body.destroy();
        throw new Error(`the catalog answered ${statusCode}`);
      }
      const { version } = JSON.parse(body.toString()) as { version?: unknown };
      if (!Number.isSafeInteger(version)) throw new Error('the catalog answered no version');
      cache.observe(version as number);
    },
    { everyMs: pollMs, logger, failure: 'asking the catalog for its version failed; retrying' },
  );
  return () => {
    stopFeed();
    stopPolling();
  };
}
