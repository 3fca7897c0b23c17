import replyFrom from '@fastify/reply-from';
import Fastify from 'fastify';
import { forwardToCatalogAndListen } from './catalog-forwarding';

/**
 * The bench's fixed reference for a Fastify proxy: Fastify and @fastify/reply-from over a
 * keep-alive undici pool with the gateway's pool settings, adding the internal headers and
 * nothing else (no key, quota, CORS, metrics or log line). What the gateway costs above this is
 * its features; this itself is the price of the plain proxy stack on the machine.
 */
async function main(): Promise<void> {
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
  await forwardToCatalogAndListen(app);
}

void main();
