import type { FastifyReply, FastifyRequest } from 'fastify';
import { ifNoneMatchMatches } from '../../../shared/entity-tags';
import type { CatalogRead } from './read-catalog';
import type { CachedAnswer } from './cache/response-cache';
import { type CatalogAnswer, discard } from './catalog-answer';
import { relayedHeaders } from './header-rules';

/** The catalog's Vary joined to the gateway's own (x-api-key, and Origin from CORS). */
function joinVary(reply: FastifyReply, vary: string | string[] | undefined): void {
  if (vary !== undefined) reply.header('vary', `${String(reply.getHeader('vary'))}, ${vary}`);
}

function relayHeaders(
  reply: FastifyReply,
  headers: CatalogAnswer['headers'],
  keepLength: boolean,
  xCache: string | undefined,
): void {
  for (const [name, value] of relayedHeaders(headers, keepLength)) reply.header(name, value);
  joinVary(reply, headers.vary);
  if (xCache !== undefined) reply.header('x-cache', xCache);
}

/** The headers of a body, which a 304 does not carry (RFC 9110 15.4.5). */
export const BODY_HEADERS: ReadonlySet<string> = new Set(['content-type', 'content-encoding']);

/** A 304 keeps the ETag and Vary of the answer, not its body headers. */
function notModified(reply: FastifyReply): FastifyReply {
  for (const name of BODY_HEADERS) reply.removeHeader(name);
  return reply.code(304).send();
}

/**
 * Whether the client already holds what a read came to (its If-None-Match names the answer's
 * ETag, or the catalog said so itself): the answer is then a 304. The one rule for both the
 * answer and its quota (a 304 takes no unit).
 */
export function notModified304(request: FastifyRequest, read: CatalogRead): boolean {
  const asked = request.headers['if-none-match'];
  if (asked === undefined) return false;
  if (read.kept !== undefined) {
    return read.kept.etag !== undefined && ifNoneMatchMatches(asked, read.kept.etag);
  }
  const { statusCode, headers } = read.relayed;
  if (statusCode === 304) return true;
  return (
    statusCode === 200 &&
    typeof headers.etag === 'string' &&
    ifNoneMatchMatches(asked, headers.etag)
  );
}

/** A kept answer, or a 304 when the client already holds its ETag. */
function answerKept(
  reply: FastifyReply,
  answer: CachedAnswer,
  xCache: string,
  held: boolean,
): FastifyReply {
  for (const [name, value] of answer.headers) {
    // A 304 has no body to describe: its headers are left out rather than set and taken back.
    if (!held || !BODY_HEADERS.has(name)) reply.header(name, value);
  }
  joinVary(reply, answer.vary);
  reply.header('x-cache', xCache);
  if (held) return reply.code(304).send();
  return reply.send(answer.body);
}

/**
 * Answers the client with what a read of the catalog came to. The catalog's answer is sent in one
 * write when it was read whole (its length known and small, cheaper than piping a stream), else
 * streamed as it comes (the export), with the catalog's length when it gave one. A 200 whose ETag
 * the client already holds becomes a 304 (the cache asks the catalog without If-None-Match).
 */
export function sendAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  read: CatalogRead,
  held = notModified304(request, read),
): FastifyReply {
  if (read.kept !== undefined) return answerKept(reply, read.kept, read.xCache, held);
  const response = read.relayed;
  if (held && response.statusCode === 200) {
    discard(response);
    relayHeaders(reply, response.headers, false, read.xCache);
    return notModified(reply);
  }
  relayHeaders(reply, response.headers, !Buffer.isBuffer(response.body), read.xCache);
  return reply.code(response.statusCode).send(response.body);
}
