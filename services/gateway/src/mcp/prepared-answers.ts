import type { JSONRPCNotification, JSONRPCRequest, RequestId } from '@modelcontextprotocol/server';
import type { FastifyRequest } from 'fastify';
import type { CachedAnswer } from '../proxy/cache/response-cache';

/**
 * An answer the SDK wrote, less its JSON-RPC id: the bytes before the id (after it: `}`), and
 * buffers holding them with room for an id, free for the next answers.
 */
export interface PreparedAnswer {
  type: string;
  head: Buffer;
  free: Buffer[];
}

/** The longest id written into a free buffer, in bytes; a longer one gets a buffer of its own. */
const ID_ROOM = 64;

/**
 * Free buffers kept per answer: as many as its answers being written at once, up to this many.
 * An answer is written straight from one (no copy of its bytes per request: a list or a tool
 * result is tens of kilobytes, and allocating them for each answer was a tenth of its cost).
 */
const MAX_FREE = 64;

/** A prepared answer with its id, and how to give its buffer back once it is written. */
export interface AnswerWithId {
  bytes: Buffer;
  written: (() => void) | undefined;
}

/**
 * Distinct exchanges whose list answers are kept: a client sends the same few (its revision, its
 * envelope), so past this many the rest are simply served by the SDK each time.
 */
const MAX_LIST_EXCHANGES = 256;

/** Exchanges kept per cached catalog answer (the same tool result for a few kinds of client). */
const MAX_RESULT_EXCHANGES = 4;

/**
 * The request headers the SDK reads, and so the headers its answer depends on besides the
 * message: what the client accepts, what it sent, which revision, and the routing headers of
 * 2026-07-28 (checked against the body).
 */
export const SDK_HEADERS = [
  'accept',
  'content-type',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
] as const;

/**
 * What of a request, besides its id and its tool's arguments, the SDK's answer depends on: the
 * method, the other params (the tool's name, the 2026-07-28 envelope in `_meta`, a cursor) and
 * the headers the SDK checks. Two requests of one key get the same answer from the SDK but for
 * the id, and the same tool result for the same catalog answer.
 */
export function exchangeKey(
  request: FastifyRequest,
  message: JSONRPCRequest | JSONRPCNotification,
): string {
  let key = message.method;
  for (const name of SDK_HEADERS) key += `\n${request.headers[name] ?? ''}`;
  const params = message.params;
  for (const name in params) {
    if (name !== 'arguments') key += `\n${name}=${JSON.stringify(params[name])}`;
  }
  return key;
}

/**
 * An answer of the SDK to the request of `id`, prepared for the same exchange with any id; none
 * when it is not laid out as the SDK lays out an answer (the id last), which is then not kept.
 */
function prepared(type: string, text: string, id: RequestId): PreparedAnswer | undefined {
  const written = `"id":${JSON.stringify(id)}}`;
  if (!text.endsWith(written)) return undefined;
  const head = text.slice(0, text.length - written.length + '"id":'.length);
  return { type, head: Buffer.from(head), free: [] };
}

const CLOSING_BRACE = 0x7d;

/**
 * A prepared answer with its id, in a free buffer of the answer's: `written` gives it back, to be
 * called once the response is written (its bytes are in the socket's hands until then).
 */
export function withId(answer: PreparedAnswer, id: RequestId): AnswerWithId {
  const text = JSON.stringify(id);
  const { head, free } = answer;
  if (text.length > ID_ROOM / 4) {
    return { bytes: Buffer.concat([head, Buffer.from(`${text}}`)]), written: undefined };
  }
  let buffer = free.pop();
  if (buffer === undefined) {
    buffer = Buffer.allocUnsafeSlow(head.length + ID_ROOM);
    head.copy(buffer);
  }
  const end = head.length + buffer.write(text, head.length);
  buffer[end] = CLOSING_BRACE;
  const kept = buffer;
  return {
    bytes: buffer.subarray(0, end + 1),
    written: () => {
      if (free.length < MAX_FREE) free.push(kept);
    },
  };
}

/**
 * The SDK's answers that repeat, kept: a list or discovery result (the same for every key while
 * the process runs: the tools and resources are built with it) by exchange, and a tool's result
 * by the response cache's entry it was made of and the exchange, dropped with that entry when a
 * newer catalog answer replaces it. Only successful answers are kept; what is kept is what the
 * SDK wrote, so a request answered from here gets the bytes the SDK would write, less the work.
 */
export class PreparedAnswers {
  private readonly lists = new Map<string, PreparedAnswer>();
  private readonly results = new WeakMap<CachedAnswer, Map<string, PreparedAnswer>>();

  list(key: string): PreparedAnswer | undefined {
    return this.lists.get(key);
  }

  keepList(key: string, type: string, text: string, id: RequestId): void {
    if (this.lists.size >= MAX_LIST_EXCHANGES) return;
    const answer = prepared(type, text, id);
    if (answer !== undefined) this.lists.set(key, answer);
  }

  result(kept: CachedAnswer, key: string): PreparedAnswer | undefined {
    return this.results.get(kept)?.get(key);
  }

  keepResult(kept: CachedAnswer, key: string, type: string, text: string, id: RequestId): void {
    let byExchange = this.results.get(kept);
    if (byExchange === undefined) this.results.set(kept, (byExchange = new Map()));
    if (byExchange.size >= MAX_RESULT_EXCHANGES) return;
    const answer = prepared(type, text, id);
    if (answer !== undefined) byExchange.set(key, answer);
  }
}
