import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CATALOG_ROUTES, type CatalogRoute } from '../../../shared/contract';
import { routeNotFound } from '../../../shared/error-handler';
import { type ApiKeyGuard, chargesOnAnswer } from '../guard/api-key-guard';
import { discard } from '../proxy/catalog-answer';
import type { CatalogCall } from '../proxy/catalog-client';
import { type CatalogRead, type Upstream, forwardedPath, readCatalog } from '../proxy/read-catalog';
import { notModified304, sendAnswer } from '../proxy/send-answer';
import { SEARCH_ROUTE, type SearchRecorder } from '../analytics/search-recorder';

/** A bodiless route (GET, DELETE) has nothing to send: a stray body is kept small. */
const BODILESS_LIMIT = 1024;

/** The guard's quota calls for a conditional read, made once its answer is known. */
export type QuotaOnAnswer = Pick<ApiKeyGuard, 'charge' | 'standing' | 'headersOnRefusal'>;

/**
 * The unit of a conditional read, taken now that its answer is known: none for a 304 (its
 * rate-limit headers still set), one otherwise, refused past the quota as the guard refuses.
 */
async function takeUnit(
  quota: QuotaOnAnswer,
  request: FastifyRequest,
  reply: FastifyReply,
  read: CatalogRead,
  held: boolean,
): Promise<void> {
  if (held) return quota.standing(request, reply);
  try {
    await quota.charge(request, reply);
  } catch (err) {
    // Refused: the catalog's answer is not relayed, so its stream is let go.
    if (read.relayed !== undefined) discard(read.relayed);
    throw err;
  }
}

/**
 * The REST handler of a catalog route: the request, as it came, through the cache to the catalog.
 * `onCatalogRoute`: a route of the table (not the catch-all for the catalog's 404s). `searches`:
 * the search route's answers (not its 304s) are counted for the analytics.
 */
function forwarder(
  upstream: Upstream,
  quota: QuotaOnAnswer,
  route: string,
  { onCatalogRoute, cacheable }: { onCatalogRoute: boolean; cacheable: boolean },
  searches?: SearchRecorder,
) {
  return async function forward(request: FastifyRequest, reply: FastifyReply) {
    const read = await readCatalog(upstream, request, {
      method: request.method as CatalogCall['method'],
      path: forwardedPath(request.url),
      route,
      clientHeaders: request.headers,
      body: request.body as Buffer | undefined,
      cacheable,
    });
    const held = notModified304(request, read);
    if (chargesOnAnswer(request, onCatalogRoute)) await takeUnit(quota, request, reply, read, held);
    if (searches !== undefined && !held) {
      const { status, body } = read.kept
        ? { status: 200, body: read.kept.body }
        : { status: read.relayed.statusCode, body: read.relayed.body };
      searches.recordAnswer(
        request.caller!.keyId,
        (request.query as { q?: unknown }).q,
        status,
        body,
      );
    }
    return sendAnswer(request, reply, read, held);
  };
}

/**
 * The catalog's routes under /v1, from the one route table, and the catch-alls around them. Every
 * one is guarded by deny-by-default, the tier of its table entry checked before any body is read
 * (so no key is a 401 and a low tier a 403, never a 400); bodies are kept as bytes, never parsed
 * here. Any other read under /v1 reaches the catalog for its own 404; any other method is
 * answered 404 here, with the key checked and counted and the body never parsed.
 */
export async function catalogRoutes(
  app: FastifyInstance,
  {
    upstream,
    quota,
    searches,
  }: { upstream: Upstream; quota: QuotaOnAnswer; searches?: SearchRecorder | undefined },
) {
  await app.register(async function tableRoutes(scope) {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) =>
      done(null, body),
    );
    for (const route of CATALOG_ROUTES) {
      scope.route({
        method: route.method === 'GET' ? ['GET', 'HEAD'] : route.method,
        url: route.url,
        schema: { hide: true },
        bodyLimit: route.bodyLimit ?? BODILESS_LIMIT,
        config: { catalogRoute: route satisfies CatalogRoute },
        handler: forwarder(
          upstream,
          quota,
          route.url,
          { onCatalogRoute: true, cacheable: route.cacheable === true },
          route.url === SEARCH_ROUTE ? searches : undefined,
        ),
        // A conditional read refused before its answer (its tier, its scope).
        onError: quota.headersOnRefusal,
      });
    }
  });

  app.route({
    method: ['GET', 'HEAD'],
    url: '/v1/*',
    schema: { hide: true },
    // The catalog's 404s: every catalog route is in the table, with its scope.
    config: { scope: 'none' },
    handler: forwarder(upstream, quota, '/v1/*', { onCatalogRoute: false, cacheable: false }),
  });

  await app.register(async function otherMethods(scope) {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
    scope.route({
      method: ['POST', 'PUT', 'PATCH', 'DELETE'],
      url: '/v1/*',
      schema: { hide: true },
      config: { scope: 'none' },
      handler(request) {
        throw routeNotFound(request);
      },
    });
  });
}
