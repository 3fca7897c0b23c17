import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Keeps each connection's peer address from the moment it is accepted. A socket asks the
 * kernel for its peer the first time `remoteAddress` is read and keeps the answer; asked only
 * when the request is handled, a client that sent its request and reset the connection has no
 * address any more (the kernel forgets the peer of a reset connection), and its attempts would
 * escape every per-address limit. Read at accept, `request.ip` (and TRUST_PROXY's reading of
 * `X-Forwarded-For`, which starts from the socket's address) still has it.
 */
export const clientAddressPlugin = fp(
  async function clientAddresses(app: FastifyInstance) {
    app.server.on('connection', (socket: Socket) => void socket.remoteAddress);
  },
  { name: 'client-address' },
);

/**
 * The address per-client limits count by (SPEC B2). A connection reset before it was even
 * accepted has none: those share one count.
 */
export function clientAddress(request: FastifyRequest): string {
  return request.ip ?? 'unknown';
}
