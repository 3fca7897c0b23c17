import { type Server, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { requestArrived } from './connection-guard';
import { Errors } from './errors';

/**
 * Errors Fastify raises before a request reaches a route, and so before the error handler:
 * left alone they answer in Fastify's own shape (`{error, code, message, statusCode}`), not the
 * API's `{ "error" }` (docs/api.md#errors, docs/api.md#parameters-and-validation).
 */
export function frameworkErrors(
  error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  const mapped =
    error.code === 'FST_ERR_BAD_URL'
      ? new Errors.badUrl()
      : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new Errors.pathTooLong()
        : new Errors.badRequest();
  void reply.code(mapped.statusCode!).send({ error: mapped.message });
}

const CLIENT_ERRORS: Record<string, [number, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request took too long to arrive'],
  HPE_HEADER_OVERFLOW: [431, 'The request headers are too large'],
};

function rawJsonResponse(status: number, message: string): string {
  const body = JSON.stringify({ error: message });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/**
 * Requests Node answers itself unless told otherwise, answered in the API's shape: an
 * `Expect` other than 100-continue (417), and CONNECT, which this API does not tunnel (405).
 */
export function answerOutsideFastify(server: Server): void {
  server.on('checkExpectation', (request, response) => {
    requestArrived(request.socket);
    const body = JSON.stringify({ error: 'Only "Expect: 100-continue" is supported' });
    response
      .writeHead(417, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        connection: 'close',
      })
      .end(body);
  });
  server.on('connect', (_request, socket: Socket) => {
    socket.end(rawJsonResponse(405, 'CONNECT is not supported'));
  });
}

/**
 * Node's HTTP parser rejects some requests (headers too large, too slow, malformed) before
 * Fastify sees them; they are answered on the socket, in the API's shape, then closed.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'The request is malformed'];
  if (socket.writable) socket.write(rawJsonResponse(status, message));
  socket.destroy(error);
}
