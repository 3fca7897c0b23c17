import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

export const REQUEST_ID_HEADER = 'x-request-id';

/** A client's id is kept only if it is short and plain, so it cannot forge log content. */
const ACCEPTABLE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Fastify `genReqId`: accept the caller's X-Request-Id when it is sane, otherwise make one. */
export function requestIdFrom(req: IncomingMessage): string {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && ACCEPTABLE_ID.test(given) ? given : randomUUID();
}

/** Echoes the request id on every response, so clients can quote it and logs can be joined. */
export const requestIdPlugin = fp(
  async function requestIdEcho(app: FastifyInstance) {
    app.addHook('onRequest', (request, reply, done) => {
      reply.header(REQUEST_ID_HEADER, request.id);
      done();
    });
  },
  { name: 'request-id' },
);
