import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Lru } from 'toad-cache';
import '../../../shared/caller';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Successful answers of this GET route may be served again from memory. */
    cacheable?: boolean;
  }
  interface FastifyRequest {
    cacheKey: string | null;
  }
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Serialized 200 answers of cacheable routes, by tier and URL, kept in a bounded LRU. Only for
 * a store whose data cannot change while the process runs (the embedded dataset): a repeated
 * list, detail or search costs a lookup instead of a query and a serialization.
 */
export const responseCachePlugin = fp<{ maxEntries: number }>(
  async function responseCache(app: FastifyInstance, { maxEntries }) {
    const cache = new Lru<string>(maxEntries);
    app.decorateRequest('cacheKey', null);

    // After internal auth (registered before this plugin), so the tier is known and trusted.
    app.addHook('preValidation', async (request, reply) => {
      if (!request.routeOptions.config.cacheable || request.method !== 'GET' || !request.caller)
        return;
      const key = `${request.caller.tier} ${request.url}`;
      const body = cache.get(key);
      if (body !== undefined) return reply.type(JSON_TYPE).send(body);
      request.cacheKey = key;
    });

    app.addHook('onSend', async (request, reply, payload) => {
      if (request.cacheKey !== null && reply.statusCode === 200 && typeof payload === 'string') {
        cache.set(request.cacheKey, payload);
      }
      return payload;
    });
  },
  { name: 'response-cache', dependencies: ['internal-auth'] },
);
