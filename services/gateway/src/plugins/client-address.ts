import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import ipaddr from 'ipaddr.js';

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
 * What per-client limits count by, for one address: an IPv4 address itself; an IPv6 address by
 * its /64, since one subscriber, host or VM is given a whole /64 and picks addresses within it at
 * will (privacy extensions rotate them), so counting each would let one client start afresh
 * with every address; an IPv4-mapped IPv6 address (a dual-stack socket's) as its IPv4 address.
 */
export function addressGroup(address: string): string {
  if (!address.includes(':') || !ipaddr.IPv6.isValid(address)) return address;
  const parsed = ipaddr.IPv6.parse(address);
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString();
  const prefix = parsed.parts.slice(0, 4).map((part) => part.toString(16));
  return `${prefix.join(':')}::/64`;
}

/**
 * The address per-client limits count by (docs/api.md#api-keys-and-registration), grouped as above.
 * A connection reset before it was even accepted has none: those share one count.
 */
export function clientAddress(request: FastifyRequest): string {
  return request.ip === undefined ? 'unknown' : addressGroup(request.ip);
}
