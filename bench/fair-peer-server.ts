import rateLimit from '@fastify/rate-limit';
import replyFrom from '@fastify/reply-from';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { forwardToCatalogAndListen } from './catalog-forwarding';

/**
 * The fair peer of the gateway: what a Node team would build instead, set up as the plugins'
 * READMEs show and not tuned. Fastify, @fastify/rate-limit with its Redis store (one script call
 * per request, a daily window per API key) and @fastify/reply-from to the catalog, adding the
 * internal headers. Unlike the gateway it checks no key, keeps no response cache, writes no
 * access line and keeps no metrics: the gateway's features are what it should be cheaper than.
 */
async function main(): Promise<void> {
  const app = Fastify();
  // The README's recommended client settings for rate limiting.
  const redis = new Redis(process.env.REDIS_URL!, { connectTimeout: 500, maxRetriesPerRequest: 1 });
  await app.register(rateLimit, {
    max: Number(process.env.QUOTA_FREE ?? 100_000_000),
    timeWindow: '1 day',
    redis,
    keyGenerator: (request) => String(request.headers['x-api-key']),
  });
  await app.register(replyFrom, { base: process.env.CATALOG_URL! });
  await forwardToCatalogAndListen(app);
}

void main();
