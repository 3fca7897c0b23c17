import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import type { FastifyInstance, onSendAsyncHookHandler } from 'fastify';
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
  body: string | Buffer;
  etag: string;
  /** The variant's Content-Encoding; undefined for identity. */
  encoding: string | undefined;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** A strong ETag of the tier and the body: the same bytes for Free and Pro differ in ETag. */
function entityTag(tier: string, body: string): string {
  return `"${createHash('sha1').update(tier).update('\n').update(body).digest('base64url')}"`;
}

/** An encoded variant's ETag: the identity ETag with the encoding inside the quotes. */
const variantTag = (etag: string, encoding: string | undefined) =>
  encoding === undefined ? etag : `${etag.slice(0, -1)}-${encoding}"`;

/** RFC 9110 If-None-Match: a list of tags, or `*`; weak tags compare by their opaque part. */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/**
 * Serialized 200 answers of cacheable routes by tier, URL and Accept-Encoding, as sent (so
 * Brotli, gzip and identity are variants of their own, each compressed once), in a bounded
 * LRU, each with the catalog version it was computed at: once the store has a newer version
 * (an operator change, announced on the change feed) older entries are misses, so no entry
 * outlives the data behind it. Every cacheable answer carries an ETag, an encoded one the
 * identity ETag with a suffix; a matching If-None-Match gets a bodiless 304.
 */
export const responseCachePlugin = fp<{ maxEntries: number; store: CatalogReader }>(
  async function responseCache(app: FastifyInstance, { maxEntries, store }) {
    const cache = new Lru<Entry>(maxEntries);
    app.decorateRequest('cacheSlot', null);

    // After internal auth (registered before this plugin), so the tier is known and trusted.
    app.addHook('preValidation', async (request, reply) => {
      if (!request.routeOptions.config.cacheable || request.method !== 'GET' || !request.caller)
        return;
      // The header as sent, as a shared cache keys on Vary: the gateway forwards a client's.
      const key = `${request.caller.tier} ${request.url} ${request.headers['accept-encoding'] ?? ''}`;
      const entry = cache.get(key);
      if (entry !== undefined && entry.version === store.version) {
        reply.header('etag', entry.etag);
        if (entry.encoding !== undefined) reply.header('vary', 'accept-encoding');
        if (matches(request.headers['if-none-match'], entry.etag)) return reply.code(304).send();
        if (entry.encoding !== undefined) reply.header('content-encoding', entry.encoding);
        return reply.type(JSON_TYPE).send(entry.body);
      }
      request.cacheSlot = { key, version: store.version };
    });

    // Before compression (a route hook, after this one): the ETag of the identity bytes.
    app.addHook('onSend', async (request, reply, payload) => {
      if (request.cacheSlot !== null && reply.statusCode === 200 && typeof payload === 'string')
        reply.header('etag', entityTag(request.caller!.tier, payload));
      return payload;
    });

    // After compression: the bytes as sent are kept, under the variant's own ETag.
    const keepVariant: onSendAsyncHookHandler<unknown> = async (request, reply, payload) => {
      const slot = request.cacheSlot;
      const identityTag = reply.getHeader('etag');
      if (slot === null || reply.statusCode !== 200 || typeof identityTag !== 'string')
        return payload;
      const encoding = reply.getHeader('content-encoding') as string | undefined;
      // Bigger bodies are compressed in the libuv pool, as a stream: collected once, here.
      const body =
        typeof (payload as Readable).pipe === 'function'
          ? await buffer(payload as Readable)
          : (payload as string | Buffer);
      const etag = variantTag(identityTag, encoding);
      cache.set(slot.key, { version: slot.version, body, etag, encoding });
      reply.header('etag', etag);
      if (matches(request.headers['if-none-match'], etag)) {
        reply.code(304).removeHeader('content-encoding');
        return '';
      }
      return body;
    };
    app.addHook('onRoute', (route) => {
      if (!route.config?.cacheable) return;
      const hooks = route.onSend;
      route.onSend = [...(hooks === undefined ? [] : [hooks].flat()), keepVariant];
    });
  },
  // Compression adds its onSend hook to each route first; keepVariant must come after it.
  { name: 'response-cache', dependencies: ['internal-auth', 'compression'] },
);
