import type { FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import type { CatalogRoute } from '../../../shared/contract';
import type { CachedAnswer } from '../proxy/cache/response-cache';
import { type CatalogRead, type Upstream, readCatalog } from '../proxy/read-catalog';

/**
 * A tool's or resource's catalog call carries none of the MCP request's headers (its Accept, its
 * body's type and length): the caller's identity, request id and trace are set by the call
 * itself, and no Accept-Encoding gets the answer as plain JSON (shared in the cache with REST
 * calls without one).
 */
const NO_CLIENT_HEADERS = {};

/**
 * What a mirrored read came to: the status and JSON bytes of the REST answer, and the response
 * cache's entry when it came from there (the same object for as long as that answer is current).
 */
export interface MirroredRead {
  status: number;
  bytes: Buffer;
  kept: CachedAnswer | undefined;
}

async function mirroredOf(read: CatalogRead): Promise<MirroredRead> {
  if (read.kept !== undefined) return { status: 200, bytes: read.kept.body, kept: read.kept };
  const { statusCode, body } = read.relayed;
  const bytes = body instanceof Readable ? Buffer.concat(await body.toArray()) : body;
  return { status: statusCode, bytes, kept: undefined };
}

/**
 * Reads `path` of a REST route for the caller of `request`, as that route's REST call would:
 * through the gateway's response cache and catalog call, so a tool or resource gets the records
 * REST gives the caller's tier. The gateway's own errors (the catalog down: 502, 503, 504) come
 * back as their status and error body, as REST answers them.
 */
export async function readMirroredRoute(
  upstream: Upstream,
  request: FastifyRequest,
  route: CatalogRoute,
  path: string,
): Promise<MirroredRead> {
  try {
    const read = await readCatalog(upstream, request, {
      method: 'GET',
      path,
      route: route.url,
      clientHeaders: NO_CLIENT_HEADERS,
      cacheable: route.cacheable === true,
    });
    return await mirroredOf(read);
  } catch (err) {
    // callCatalog's failures are the API's 502/503/504, logged there; their message says it.
    const { code, statusCode, message } = err as Error & { code?: string; statusCode?: number };
    if (code?.startsWith('TD_') !== true || statusCode === undefined) throw err;
    return {
      status: statusCode,
      bytes: Buffer.from(JSON.stringify({ error: message })),
      kept: undefined,
    };
  }
}

/** The API's message of a read that did not succeed; undefined for a 200. */
export function errorOf(read: MirroredRead): string | undefined {
  if (read.status === 200) return undefined;
  const { error } = JSON.parse(read.bytes.toString()) as { error?: string };
  return error ?? `The catalog answered ${read.status}`;
}
