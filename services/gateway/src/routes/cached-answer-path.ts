import type {
  IncomingMessage,
  OutgoingHttpHeader,
  RequestListener,
  Server,
  ServerResponse,
} from 'node:http';
import FindMyWay, { type Config as RouterConfig } from 'find-my-way';
import type { Span, Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { CatalogRoute } from '../../../shared/contract';
import { ifNoneMatchMatches } from '../../../shared/entity-tags';
import type { HttpMetrics } from '../../../shared/metrics';
import { REQUEST_ID_HEADER, requestIdFrom } from '../../../shared/request-id';
import { writeAccessLine } from '../../../shared/request-log';
import { tierAtLeast } from '../../../shared/tiers';
import { traceFieldsOf } from '../../../shared/logger';
import { endServerSpan, startServerSpan, tagCaller } from '../../../shared/span-attributes';
import { SEARCH_ROUTE, type SearchRecorder } from '../analytics/search-recorder';
import type { ApiKeyGuard } from '../guard/api-key-guard';
import { handUnitOver } from '../guard/unit-taken-ahead';
import type { KeyRecord } from '../keys/key-store';
import { hasScope } from '../plugins/deny-by-default';
import type { CorsWithoutOrigin } from '../plugins/cors';
import type { QuotaDecision, QuotaLimiter } from '../quota/quota-limiter';
import { rateLimitHeaderPairs } from '../quota/rate-limit-headers';
import { type CachedAnswer, type ResponseCache, cacheKey } from '../proxy/cache/response-cache';
import { BODY_HEADERS } from '../proxy/send-answer';

export interface CachedAnswerPathOptions {
  /** Every route the gateway serves (its route security list), so a URL is routed as Fastify routes it. */
  routes: readonly { method: string; url: string }[];
  /** The route table's entries; the cacheable GETs are the ones this path answers. */
  catalogRoutes: readonly CatalogRoute[];
  /** Fastify's router options, for the same match. */
  routerOptions: Partial<RouterConfig<never>>;
  guard: Pick<ApiKeyGuard, 'cachedCaller' | 'policyOf' | 'admitted'>;
  quota: Pick<QuotaLimiter, 'consume' | 'peek'>;
  cache: ResponseCache;
  /** The response cache's hit counter. */
  hits: { inc(): void };
  cors: CorsWithoutOrigin;
  /** The access log, or undefined when the gateway logs nothing. */
  accessLog: Logger | undefined;
  /**
   * The gateway's logger: its level decides whether an access line is written, as it decides for
   * Fastify's requests (the routes this path answers set no level of their own); and it logs a
   * failure after an answer was written.
   */
  log: Logger | undefined;
  httpMetrics: HttpMetrics;
  searches?: SearchRecorder | undefined;
  /** While the gateway drains, every answer closes its connection: Fastify's answers do that. */
  draining(): boolean;
  /** The tracer while tracing is on: each answer gets the SERVER span Fastify's would. */
  tracer: Tracer | undefined;
}

const SLASH = 47;

/**
 * Whether the path of a request's URL (before its query) is escaped (`%`) or steps up (`..`):
 * Fastify decodes and normalises such a path before routing it, so it is Fastify's to route. A
 * query is the same bytes on both paths (the cache's key is the URL as sent, and both parse the
 * query with the same parser), so a search of two words (`q=vector%20database`) is answered here.
 */
function escapedPath(url: string): boolean {
  const query = url.indexOf('?');
  const end = query === -1 ? url.length : query;
  const percent = url.indexOf('%');
  if (percent !== -1 && percent < end) return true;
  const up = url.indexOf('..');
  return up !== -1 && up < end;
}

/** One request this path answers: what it found before the quota's answer. */
interface Hit {
  route: CatalogRoute;
  record: KeyRecord;
  answer: CachedAnswer;
  /** The client holds the answer's ETag: a 304, no unit taken. */
  held: boolean;
  query: Record<string, unknown>;
  started: number;
}

/**
 * The gateway's cached-answer path: a keyed GET of a cacheable catalog route whose answer the
 * response cache holds at the newest catalog version, answered before Fastify sees it, with the
 * head and body in one write. It keeps every rule of the Fastify path for such a request, asking
 * the same functions: the key (the guard's cache, a current secret), the route's tier and scope,
 * one unit (none for a 304), the rate-limit headers, CORS, the request id, X-Cache, the access
 * line, the metrics, the last use and the search analytics. Anything else falls through to
 * Fastify before any unit is taken: HEAD, a body, an Origin the CORS list must judge, an escaped
 * or absolute path (an escaped query is answered here), a key the cache does not know or whose
 * secret is not the current one, an address-bound key, a tier or scope refused, a miss, a stale
 * If-None-Match, draining. With tracing on, each answer gets the SERVER span Fastify's would
 * (shared/span-attributes.ts). A unit past the quota (or a quota error) is handed to Fastify with
 * the request, whose guard answers it as it answers its own (guard/unit-taken-ahead.ts).
 * docs/performance.md has what it saves; test/gateway/routes/cached-answer-path.test.ts holds
 * its answers to Fastify's.
 */
export function cachedAnswerPath(options: CachedAnswerPathOptions) {
  const { guard, quota, cache, hits, cors, accessLog, httpMetrics, searches } = options;
  const router = FindMyWay<never>(options.routerOptions as RouterConfig<never>);
  const cacheable = new Map(
    options.catalogRoutes
      .filter(
        (route) =>
          route.method === 'GET' && route.cacheable === true && (route.quotaCost ?? 1) === 1,
      )
      .map((route) => [route.url, route]),
  );
  const noop = () => undefined;
  for (const { method, url } of options.routes) {
    if (method === 'GET') router.on('GET', url, noop, { route: cacheable.get(url) });
  }

  /** The answer written, then counted and logged as Fastify's onResponse hooks would. */
  function send(
    res: ServerResponse,
    requestId: string,
    hit: Hit,
    decision: QuotaDecision,
    span: Span | undefined,
  ): void {
    const { route, record, answer, held } = hit;
    const head: OutgoingHttpHeader[] = [REQUEST_ID_HEADER, requestId, ...cors.headers, 'vary'];
    head.push(answer.vary === undefined ? cors.vary : `${cors.vary}, ${answer.vary}`);
    head.push(...rateLimitHeaderPairs(decision, guard.policyOf(record.tier)));
    for (const [name, value] of answer.headers) {
      if (!held || !BODY_HEADERS.has(name)) head.push(name, value);
    }
    head.push('x-cache', 'HIT');
    // Draining began while the quota answered: this answer closes its connection, as Fastify's do.
    if (options.draining()) head.push('connection', 'close');
    const status = held ? 304 : 200;
    if (held) {
      res.writeHead(status, head).end();
    } else {
      head.push('content-length', String(answer.body.length));
      // One write: end() corks the socket around the head and the body.
      res.writeHead(status, head).end(answer.body);
      guard.admitted(record, decision);
      if (searches !== undefined && route.url === SEARCH_ROUTE) {
        searches.recordAnswer(record.id, hit.query.q, 200, answer.body);
      }
    }
    hits.inc();
    if (span !== undefined) endServerSpan(span, status);
    const elapsedMs = performance.now() - hit.started;
    httpMetrics('GET', route.url, status, elapsedMs / 1000);
    if (accessLog !== undefined && options.log?.isLevelEnabled('info')) {
      writeAccessLine(accessLog, {
        reqId: requestId,
        method: 'GET',
        route: route.url,
        status,
        elapsedMs,
        tier: record.tier,
        traceIds: span && traceFieldsOf(span),
      });
    }
  }

  /** Fastify's turn for a request this path took up: with the unit it took, if it took one. */
  function toFastify(
    req: IncomingMessage,
    res: ServerResponse,
    fastify: RequestListener,
    unit: Promise<QuotaDecision> | undefined,
  ): void {
    if (unit !== undefined) handUnitOver(req, unit);
    fastify(req, res);
  }

  /** The quota asked (a unit taken, or for a 304 only read), then the answer, or Fastify's turn. */
  async function answer(
    req: IncomingMessage,
    res: ServerResponse,
    fastify: RequestListener,
    hit: Hit,
  ): Promise<void> {
    const { record, held } = hit;
    const requestId = requestIdFrom(req);
    // Started as Fastify's would be; a request handed to Fastify gets Fastify's, and this one,
    // never ended, is never exported.
    const span =
      options.tracer &&
      startServerSpan(options.tracer, req.headers, {
        method: 'GET',
        path: req.url!,
        route: hit.route.url,
        id: requestId,
      });
    const quotaStarted = performance.now();
    const unit = held ? quota.peek(record.id, record.tier) : quota.consume(record.id, record.tier);
    // A 304's read of the quota takes nothing: Fastify reads it again.
    const taken = held ? undefined : unit;
    let decision: QuotaDecision;
    try {
      decision = await unit;
    } catch {
      return toFastify(req, res, fastify, taken);
    }
    if (!held && !decision.allowed) return toFastify(req, res, fastify, taken);
    if (span !== undefined) tagCaller(span, record.tier, performance.now() - quotaStarted);
    try {
      send(res, requestId, hit, decision, span);
    } catch (err) {
      // Nothing written yet: Fastify answers, through its error handler if it fails alike.
      if (!res.headersSent) return toFastify(req, res, fastify, taken);
      options.log?.error({ err }, 'cached-answer path failed after answering');
    }
  }

  /** What this path answers, found without awaiting anything; undefined for Fastify's turn. */
  function hitOf(req: IncomingMessage): Hit | undefined {
    const { headers } = req;
    if (
      req.method !== 'GET' ||
      (headers.origin !== undefined && !cors.anyOrigin) ||
      headers['content-length'] !== undefined ||
      headers['transfer-encoding'] !== undefined ||
      options.draining()
    ) {
      return undefined;
    }
    const url = req.url!;
    if (url.charCodeAt(0) !== SLASH || escapedPath(url)) return undefined;
    const found = router.find('GET', url);
    const route = (found?.store as { route: CatalogRoute | undefined } | undefined)?.route;
    if (route === undefined) return undefined;
    const record = guard.cachedCaller(headers['x-api-key']);
    if (
      record === undefined ||
      !tierAtLeast(record.tier, route.tier) ||
      !hasScope(record.scopes, route.scope)
    ) {
      return undefined;
    }
    const answer = cache.get(cacheKey(record.tier, url, headers['accept-encoding']));
    if (answer === undefined) return undefined;
    const asked = headers['if-none-match'];
    const held = asked !== undefined;
    if (held && (answer.etag === undefined || !ifNoneMatchMatches(asked, answer.etag))) {
      return undefined;
    }
    const query = found!.searchParams as Record<string, unknown>;
    return { route, record, answer, held, query, started: performance.now() };
  }

  return function answerOrPass(
    req: IncomingMessage,
    res: ServerResponse,
    fastify: RequestListener,
  ): void {
    let hit: Hit | undefined;
    try {
      hit = hitOf(req);
    } catch {
      // Nothing taken or written yet: whatever this path cannot read, Fastify decides.
      hit = undefined;
    }
    if (hit === undefined) fastify(req, res);
    else void answer(req, res, fastify, hit);
  };
}

/**
 * Puts the cached-answer path in front of Fastify on the gateway's server: Fastify's request
 * listener (the first, the one `http.createServer` was given) is called for every request the
 * path does not answer; other listeners (the connection guard's) still hear every request.
 * `inject` calls Fastify directly, so it always takes the Fastify path.
 */
export function answerCachedFirst(server: Server, path: ReturnType<typeof cachedAnswerPath>): void {
  const fastify = server.listeners('request')[0] as RequestListener | undefined;
  if (fastify === undefined) throw new Error("expected Fastify's request listener");
  server.removeListener('request', fastify);
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) =>
    path(req, res, fastify),
  );
}
