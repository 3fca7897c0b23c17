import type { FastifyReplyFromHooks } from '@fastify/reply-from';
import type { FastifyInstance } from 'fastify';
import { INTERNAL_HEADERS } from '../services/shared/contract';

/**
 * What the bench's Fastify proxies share: `/v1/*` forwarded with @fastify/reply-from (registered
 * by the caller, with its own settings) adding the internal headers of a Free caller, then the
 * listening port handed to the bench that forked the process.
 */
export async function forwardToCatalogAndListen(app: FastifyInstance): Promise<void> {
  const token = process.env.INTERNAL_TOKEN ?? 'bench-internal-token-000000';
  const rewriteRequestHeaders: FastifyReplyFromHooks['rewriteRequestHeaders'] = (_, headers) => {
    headers[INTERNAL_HEADERS.token] = token;
    headers[INTERNAL_HEADERS.tier] = 'free';
    return headers;
  };
  app.get('/v1/*', (request, reply) => reply.from(request.url, { rewriteRequestHeaders }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.send?.({ port: (app.server.address() as { port: number }).port });
}
