import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onSendHookHandler,
  preValidationHookHandler,
} from 'fastify';
import fp from 'fastify-plugin';
import { Lru } from 'toad-cache';
import { CATALOG_VERSION_HEADER } from '../../../shared/contract';
import type { CatalogReader } from '../store/catalog-store';
import { COMPRESSION_OFF_HEADER } from './compression';
import { ifNoneMatchMatches } from '../../../shared/entity-tags';

interface Entry {
  version: number;
  body: string | Buffer;
  etag: string;
  /** Headers of a 200 hit, built once: type, ETag, version, an encoded variant's encoding. */
  headers: Record<string, string>;
  /** Headers of a 304 hit: those without the body's type and encoding. */
  notModifiedHeaders: Record<string, string>;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** A strong ETag of the tier and the body: the same bytes for Free and Pro differ in ETag. */
function entityTag(tier: string, body: string): string {
  return `"${createHash('sha1').update(tier).update('\n').update(body).digest('base64url')}"`;
}

/** An encoded variant's ETag: the identity ETag with the encoding inside the quotes. */
const variantTag = (etag: string, encoding: string | undefined) =>
  encoding === undefined ? etag : `${etag.slice(0, -1)}-${encoding}"`;

const notModified = (request: FastifyRequest, etag: string) =>
  ifNoneMatchMatches(request.headers['if-none-match'], etag);

function entry(version: number, body: string | Buffer, etag: string, encoding?: string): Entry {
  const notModifiedHeaders: Record<string, string> = {
    etag,
    [CATALOG_VERSION_HEADER]: String(version),
    ...(encoding !== undefined && { vary: 'accept-encoding' }),
  };
  const headers = {
    ...notModifiedHeaders,
    'content-type': JSON_TYPE,
    ...(encoding !== undefined && { 'content-encoding': encoding }),
  };
  return { version, body, etag, headers, notModifiedHeaders };
}

/** A route's hooks of one kind as a list, whether it declared none, one or several. */
const hookList = <Hook>(hooks: Hook | Hook[] | undefined): Hook[] =>
  hooks === undefined ? [] : ([hooks].flat() as Hook[]);

/**
 * Serialized 200 answers of cacheable routes by tier, URL and Accept-Encoding, as sent (so
 * Brotli, gzip and identity are variants of their own, each compressed once), in a bounded
 * LRU, each with the catalog version it was computed at: once the store has a newer version
 * (an operator change, announced on the change feed) older entries are misses, so no entry
 * outlives the data behind it. Every cacheable answer carries an ETag, an encoded one the
 * identity ETag with a suffix; a matching If-None-Match gets a bodiless 304. Answers the cache
 * serves or stores carry their version (CATALOG_VERSION_HEADER) for the gateway's cache.
 *
 * The hooks sit on the cacheable routes only, and are synchronous: a hit sends its ready
 * headers and bytes and ends the hook chain there (no handler, no promise, no serialization).
 */
export const responseCachePlugin = fp<{ maxEntries: number; store: CatalogReader }>(
  async function responseCache(app: FastifyInstance, { maxEntries, store }) {
    const cache = new Lru<Entry>(maxEntries);
    app.decorateRequest('cacheSlot', null);

    // After internal auth (an onRequest hook), so the tier is known and trusted.
    const serveFromCache: preValidationHookHandler = (request, reply, done) => {
      if (request.method !== 'GET' || request.caller === null) return done();
      // The header as sent, as a shared cache keys on Vary: the gateway forwards a client's.
      const key = `${request.caller.tier} ${request.url} ${request.headers['accept-encoding'] ?? ''}`;
      const version = store.version;
      const hit = cache.get(key);
      if (hit === undefined || hit.version !== version) {
        request.cacheSlot = { key, version };
        return done();
      }
      // Sent without calling done: the request goes no further (Fastify's early response).
      if (notModified(request, hit.etag)) reply.code(304).headers(hit.notModifiedHeaders).send();
      else reply.headers(hit.headers).send(hit.body);
    };

    // Before compression: the ETag of the identity bytes.
    const tagIdentity: onSendHookHandler<unknown> = (request, reply, payload, done) => {
      if (request.cacheSlot !== null && reply.statusCode === 200 && typeof payload === 'string')
        reply.header('etag', entityTag(request.caller!.tier, payload));
      done(null, payload);
    };

    /**
     * A miss's bytes as sent get the variant's own ETag (a matching one gets 304) and are kept,
     * unless they are not what the Accept-Encoding in the key chooses: so compression has
     * nothing to do for a hit.
     */
    function keepVariant(request: FastifyRequest, reply: FastifyReply, body: string | Buffer) {
      const { key, version } = request.cacheSlot!;
      const encoding = reply.getHeader('content-encoding') as string | undefined;
      const etag = variantTag(reply.getHeader('etag') as string, encoding);
      // Compression has set the variant's Vary already.
      reply.header('etag', etag);
      if (request.headers[COMPRESSION_OFF_HEADER] === undefined) {
        cache.set(key, entry(version, body, etag, encoding));
        reply.header(CATALOG_VERSION_HEADER, String(version));
      }
      if (!notModified(request, etag)) return body;
      reply.code(304).removeHeader('content-encoding');
      return '';
    }

    // After compression, for a miss that got its identity ETag.
    const afterCompression: onSendHookHandler<unknown> = (request, reply, payload, done) => {
      if (request.cacheSlot === null || reply.statusCode !== 200 || !reply.hasHeader('etag'))
        return done(null, payload);
      // Bigger bodies are compressed in the libuv pool, as a stream: collected once, here.
      if (typeof (payload as Readable).pipe === 'function') {
        buffer(payload as Readable).then(
          (body) => done(null, keepVariant(request, reply, body)),
          done,
        );
        return;
      }
      done(null, keepVariant(request, reply, payload as string | Buffer));
    };

    // Compression has added its onSend hook to the route already: it runs between these two.
    app.addHook('onRoute', (route) => {
      if (route.config?.catalogRoute?.cacheable !== true) return;
      route.preValidation = [serveFromCache, ...hookList(route.preValidation)];
      route.onSend = [tagIdentity, ...hookList(route.onSend), afterCompression];
    });
  },
  { name: 'response-cache', dependencies: ['internal-auth', 'route-contract', 'compression'] },
);
