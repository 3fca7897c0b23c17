import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';

/** Where a request carries the body the prepared-answer path read before handing it to Fastify. */
const READ_AHEAD = Symbol('body read ahead');

type WithBody = IncomingMessage & { [READ_AHEAD]?: Buffer };

/**
 * Hands a request to Fastify with its body already read (the prepared-answer path reads it to
 * know the message): the request's own stream has ended, so the route reads these bytes instead.
 */
export function handBodyOver(raw: IncomingMessage, body: Buffer): void {
  (raw as WithBody)[READ_AHEAD] = body;
}

/**
 * The body read before Fastify saw the request, as a stream for the route's `preParsing` hook to
 * put in place of the request's; undefined when none was read (Fastify reads the request's).
 */
export function bodyReadAhead(raw: IncomingMessage): Readable | undefined {
  const body = (raw as WithBody)[READ_AHEAD];
  return body === undefined ? undefined : Readable.from([body]);
}
