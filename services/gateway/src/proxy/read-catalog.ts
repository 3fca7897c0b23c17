import type { FastifyRequest } from 'fastify';
import { CATALOG_VERSION_HEADER } from '../../../shared/contract';
import type { CatalogAnswer } from './catalog-answer';
import { type CatalogRequest, type Upstream, callCatalog } from './catalog-call';
import { relayedHeaders } from './header-rules';
import { type CachedAnswer, cacheKey } from './cache/response-cache';

/**
 * What a read of the catalog came to: an answer kept in the response cache (or just kept), or the
 * catalog's answer as it came (a route not cached, a key asked once, an answer too big to keep).
 * `xCache` is the `X-Cache` the client gets; none while the cache is off.
 */
export type CatalogRead =
  | { kept: CachedAnswer; relayed?: undefined; xCache: 'HIT' | 'MISS' }
  | { kept?: undefined; relayed: CatalogAnswer; xCache: 'MISS' | undefined };

/**
 * Reads the catalog through the gateway's response cache. A cacheable GET is answered from the
 * cache while the catalog version it was computed at is the newest known (`X-Cache: HIT`);
 * concurrent misses of one kept key share one catalog call; an answer is kept from its key's
 * second request on. Anything else is one catalog call. The caller answers with the result
 * (send-answer.ts), or reads its body (an MCP tool).
 */
export async function readCatalog(
  upstream: Upstream,
  request: FastifyRequest,
  call: CatalogRequest,
): Promise<CatalogRead> {
  const { cache } = upstream;
  if (cache === undefined || call.cacheable !== true) {
    return { relayed: await callCatalog(upstream, request, call), xCache: cache && 'MISS' };
  }
  const key = cacheKey(request.caller!.tier, call.path, call.clientHeaders['accept-encoding']);
  // Awaited only when a call is under way: an await of nothing still costs a microtask turn.
  let answer = cache.get(key);
  if (answer === undefined) {
    const pending = cache.pending(key);
    if (pending !== undefined) answer = await pending;
  }
  if (answer !== undefined) {
    upstream.hits.inc();
    return { kept: answer, xCache: 'HIT' };
  }
  upstream.misses.inc();
  if (call.method !== 'GET' || !cache.admit(key)) {
    return { relayed: await callCatalog(upstream, request, call), xCache: 'MISS' };
  }
  return cache.fill(key, (share) => fetchAndKeep(upstream, request, call, key, share));
}

/**
 * A miss: the catalog is asked without If-None-Match, so its whole answer can be kept (the 304 is
 * decided when answering). An answer without a catalog version, or too big, is relayed only.
 */
async function fetchAndKeep(
  upstream: Upstream,
  request: FastifyRequest,
  call: CatalogRequest,
  key: string,
  share: (answer: CachedAnswer | undefined) => void,
): Promise<CatalogRead> {
  const cache = upstream.cache!;
  const response = await callCatalog(upstream, request, { ...call, omit: 'if-none-match' });
  const version = Number(response.headers[CATALOG_VERSION_HEADER]);
  const { body } = response;
  if (
    response.statusCode !== 200 ||
    !Number.isSafeInteger(version) ||
    !Buffer.isBuffer(body) ||
    body.length > cache.maxEntryBytes
  ) {
    return { relayed: response, xCache: 'MISS' };
  }
  const etag = response.headers.etag;
  const answer: CachedAnswer = {
    version,
    headers: relayedHeaders(response.headers, false),
    vary: response.headers.vary as string | undefined,
    etag: typeof etag === 'string' ? etag : undefined,
    // A copy: the bytes as read are a slice of one socket read, headers included, which a kept
    // slice would hold on to beyond what the cache counts.
    body: Buffer.from(body),
  };
  cache.set(key, answer);
  share(answer);
  return { kept: answer, xCache: 'MISS' };
}
