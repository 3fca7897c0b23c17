import replyFrom, { type FastifyReplyFromHooks } from '@fastify/reply-from';
import Fastify from 'fastify';
import { INTERNAL_HEADERS } from '../services/shared/contract';

/**
 * The bench's fixed reference for a Fastify proxy: Fastify and @fastify/reply-from over a
 * keep-alive undici pool with the gateway's pool settings, adding the internal headers and
 * nothing else (no key, quota, CORS, metrics or log line). What the gateway costs above this is
 * its features; this itself is the price of the plain proxy stack on the machine.
 */
async function main(): Promise<void> {
  const token = process.env.INTERNAL_TOKEN ?? 'bench-internal-token-000000';
  const app = Fastify();
  await app.register(replyFrom, {
    base: process.env.CATALOG_URL!,
    disableRequestLogging: true,
    undici: {
      connections: 128,
      pipelining: 1,
      keepAliveTimeout: 60_000,
      headersTimeout: 5_000,
      bodyTimeout: 5_000,
    },
  });
  const rewriteRequestHeaders: FastifyReplyFromHooks['rewriteRequestHeaders'] = (_, headers) => {
    headers[INTERNAL_HEADERS.token] = token;
    headers[INTERNAL_HEADERS.tier] = 'free';
    return headers;
  };
  app.get('/v1/*', (request, reply) => reply.from(request.url, { rewriteRequestHeaders }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.send?.({ port: (app.server.address() as { port: number }).port });
}

void main();
