import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Lru } from 'toad-cache';
import '../../../shared/caller';
import type { CatalogReader } from '../store/catalog-store';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Successful answers of this GET route may be served again from memory, with an ETag. */
    cacheable?: boolean;
  }
  interface FastifyRequest {
    /** Where this request's answer is cached, and the catalog version it was computed at. */
    cacheSlot: { key: string; version: number } | null;
  }
}

interface Entry {
  version: number;
  body: string;
  etag: string;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** A strong ETag of the tier and the body: the same bytes for Free and Pro differ in ETag. */
function entityTag(tier: string, body: string): string {
  return `"${createHash('sha1').update(tier).update('\n').update(body).digest('base64url')}"`;
}

/** RFC 9110 If-None-Match: a list of tags, or `*`; weak tags compare by their opaque part. */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/**
 * Serialized 200 answers of cacheable routes by tier and URL, in a bounded LRU, each with the
 * catalog version it was computed at: once the store has a newer version (an operator change,
 * announced on the change feed) older entries are misses, so no entry outlives the data behind
 * it. Every cacheable answer carries an ETag; a matching If-None-Match gets a bodiless 304.
 */
export const responseCachePlugin = fp<{ maxEntries: number; store: CatalogReader }>(
  async function responseCache(app: FastifyInstance, { maxEntries, store }) {
    const cache = new Lru<Entry>(maxEntries);
    app.decorateRequest('cacheSlot', null);

    // After internal auth (registered before this plugin), so the tier is known and trusted.
    app.addHook('preValidation', async (request, reply) => {
      if (!request.routeOptions.config.cacheable || request.method !== 'GET' || !request.caller)
        return;
      const key = `${request.caller.tier} ${request.url}`;
      const entry = cache.get(key);
      if (entry !== undefined && entry.version === store.version) {
        reply.header('etag', entry.etag);
        if (matches(request.headers['if-none-match'], entry.etag)) return reply.code(304).send();
        return reply.type(JSON_TYPE).send(entry.body);
      }
      request.cacheSlot = { key, version: store.version };
    });

    app.addHook('onSend', async (request, reply, payload) => {
      const slot = request.cacheSlot;
      if (slot === null || reply.statusCode !== 200 || typeof payload !== 'string') return payload;
      const etag = entityTag(request.caller!.tier, payload);
      cache.set(slot.key, { version: slot.version, body: payload, etag });
      reply.header('etag', etag);
      if (matches(request.headers['if-none-match'], etag)) {
        reply.code(304);
        return '';
      }
      return payload;
    });
  },
  { name: 'response-cache', dependencies: ['internal-auth'] },
);
