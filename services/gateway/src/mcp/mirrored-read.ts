import type { FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import type { CatalogRoute } from '../../../shared/contract';
import { type CatalogRead, type Upstream, readCatalog } from '../proxy/read-catalog';
import type { CatalogAnswerBody } from './catalog-tool';

/**
 * A tool's or resource's catalog call carries none of the MCP request's headers (its Accept, its
 * body's type and length): the caller's identity, request id and trace are set by the call
 * itself, and no Accept-Encoding gets the answer as plain JSON (shared in the cache with REST
 * calls without one).
 */
const NO_CLIENT_HEADERS = {};

/** The status and the JSON text of what a read of the catalog came to. */
async function answerOf(read: CatalogRead): Promise<{ status: number; text: string }> {
  if (read.kept !== undefined) return { status: 200, text: read.kept.body.toString() };
  const { statusCode, body } = read.relayed;
  const bytes = body instanceof Readable ? Buffer.concat(await body.toArray()) : body;
  return { status: statusCode, text: bytes.toString() };
}

/** What a mirrored read came to: the catalog's answer, or the API's message of its error. */
export type MirroredAnswer =
  { body: CatalogAnswerBody; text: string; error?: undefined } | { error: string; status: number };

/**
 * Reads `path` of a REST route for the caller of `request`, as that route's REST call would:
 * through the gateway's response cache and catalog call, so a tool or resource gets the records
 * REST gives the caller's tier. The catalog's error answers (an unknown slug, a parameter out of
 * range) and the gateway's own (the catalog down: 502, 503, 504) come back as their message.
 */
export async function readMirroredRoute(
  upstream: Upstream,
  request: FastifyRequest,
  route: CatalogRoute,
  path: string,
): Promise<MirroredAnswer> {
  let answer: { status: number; text: string };
  try {
    const read = await readCatalog(upstream, request, {
      method: 'GET',
      path,
      route: route.url,
      clientHeaders: NO_CLIENT_HEADERS,
      cacheable: route.cacheable === true,
    });
    answer = await answerOf(read);
  } catch (err) {
    // callCatalog's failures are the API's 502/503/504, logged there; their message says it.
    const code = (err as { code?: string; statusCode?: number }).code;
    if (code?.startsWith('TD_') === true) {
      return { error: (err as Error).message, status: (err as { statusCode: number }).statusCode };
    }
    throw err;
  }
  const body = JSON.parse(answer.text) as CatalogAnswerBody & { error?: string };
  if (answer.status !== 200) {
    return { error: body.error ?? `The catalog answered ${answer.status}`, status: answer.status };
  }
  return { body, text: answer.text };
}
