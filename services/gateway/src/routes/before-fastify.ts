import type {
  IncomingMessage,
  OutgoingHttpHeader,
  RequestListener,
  Server,
  ServerResponse,
} from 'node:http';
import type { Span, Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { HttpMetrics } from '../../../shared/metrics';
import { REQUEST_ID_HEADER } from '../../../shared/request-id';
import { writeAccessLine } from '../../../shared/request-log';
import { traceFieldsOf } from '../../../shared/logger';
import { endServerSpan, startServerSpan } from '../../../shared/span-attributes';
import type { CatalogRoute } from '../../../shared/contract';
import { type Tier, tierAtLeast } from '../../../shared/tiers';
import type { SearchRecorder } from '../analytics/search-recorder';
import type { ApiKeyGuard } from '../guard/api-key-guard';
import type { KeyRecord } from '../keys/key-store';
import { hasScope } from '../plugins/deny-by-default';
import type { CorsWithoutOrigin } from '../plugins/cors';
import type { QuotaDecision, QuotaLimiter } from '../quota/quota-limiter';
import { rateLimitHeaderPairs } from '../quota/rate-limit-headers';

/**
 * What a path that answers before Fastify (the cached-answer path, the prepared MCP answers)
 * needs to keep Fastify's rules for the requests it answers: the same functions Fastify's hooks
 * and the guard ask.
 */
export interface BeforeFastifyOptions {
  guard: Pick<ApiKeyGuard, 'cachedCaller' | 'policyOf' | 'admitted'>;
  quota: Pick<QuotaLimiter, 'consume' | 'peek'>;
  cors: CorsWithoutOrigin;
  /** The access log, or undefined when the gateway logs nothing. */
  accessLog: Logger | undefined;
  /** The gateway's logger, for a failure after an answer was written. */
  log: Logger | undefined;
  httpMetrics: HttpMetrics;
  searches?: SearchRecorder | undefined;
  /** While the gateway drains, every answer closes its connection: Fastify's answers do that. */
  draining(): boolean;
  /** The tracer while tracing is on: each answer gets the SERVER span Fastify's would. */
  tracer: Tracer | undefined;
}

/** A path's turn at a request: it answers it, or calls `fastify` with it. */
export type AnswerOrPass = (
  req: IncomingMessage,
  res: ServerResponse,
  fastify: RequestListener,
) => void;

/**
 * The caller of a request a path may answer for `route`: a key sent as `x-api-key` that the
 * guard's cache knows (guard.cachedCaller), whose tier and scopes allow the route; undefined for
 * anything else, which Fastify's guard decides with every rule.
 */
export function cachedCallerOf(
  options: BeforeFastifyOptions,
  req: IncomingMessage,
  route: CatalogRoute,
): KeyRecord | undefined {
  const record = options.guard.cachedCaller(req.headers['x-api-key']);
  if (
    record === undefined ||
    !tierAtLeast(record.tier, route.tier) ||
    !hasScope(record.scopes, route.scope)
  ) {
    return undefined;
  }
  return record;
}

/**
 * The head of a keyed answer as the guard and Fastify's hooks set it: the request id, CORS, Vary
 * (CORS's and the key's, then the answer's own), the rate-limit headers, and while draining
 * `Connection: close`. The answer's own headers follow.
 */
export function keyedHead(
  options: BeforeFastifyOptions,
  requestId: string,
  tier: Tier,
  decision: QuotaDecision,
  vary: string | undefined,
): OutgoingHttpHeader[] {
  const { cors } = options;
  const head: OutgoingHttpHeader[] = [REQUEST_ID_HEADER, requestId, ...cors.headers, 'vary'];
  head.push(vary === undefined ? cors.vary : `${cors.vary}, ${vary}`);
  head.push(...rateLimitHeaderPairs(decision, options.guard.policyOf(tier)));
  // Draining began while the quota answered: this answer closes its connection, as Fastify's do.
  if (options.draining()) head.push('connection', 'close');
  return head;
}

/**
 * The SERVER span of a request a path took up, while tracing is on, started as Fastify's would
 * be. A request handed to Fastify gets Fastify's, and this one, never ended, is never exported.
 */
export function startPathSpan(
  options: BeforeFastifyOptions,
  req: IncomingMessage,
  route: string,
  requestId: string,
): Span | undefined {
  const { tracer } = options;
  if (tracer === undefined) return undefined;
  return startServerSpan(tracer, req.headers, {
    method: req.method!,
    path: req.url!,
    route,
    id: requestId,
  });
}

/** One answer written before Fastify, as Fastify's onResponse hooks would count and log it. */
export interface Answered {
  method: string;
  route: string;
  status: number;
  tier: Tier;
  requestId: string;
  /** `performance.now()` when the path took the request up. */
  started: number;
}

/** The span ended, the request counted in the HTTP metrics and its access line written. */
export function countAndLog(
  options: BeforeFastifyOptions,
  answered: Answered,
  span: Span | undefined,
): void {
  const { method, route, status } = answered;
  if (span !== undefined) endServerSpan(span, status);
  const elapsedMs = performance.now() - answered.started;
  options.httpMetrics(method, route, status, elapsedMs / 1000);
  const { accessLog } = options;
  if (accessLog?.isLevelEnabled('info')) {
    writeAccessLine(accessLog, {
      reqId: answered.requestId,
      method,
      route,
      status,
      elapsedMs,
      tier: answered.tier,
      traceIds: span && traceFieldsOf(span),
    });
  }
}

/**
 * Puts a path in front of Fastify on the gateway's server: Fastify's request listener (the
 * first, the one `http.createServer` was given) is called for every request the path does not
 * answer; other listeners (the connection guard's) still hear every request. `inject` calls
 * Fastify directly, so it always takes the Fastify path.
 */
export function answerBeforeFastify(server: Server, path: AnswerOrPass): void {
  const fastify = server.listeners('request')[0] as RequestListener | undefined;
  if (fastify === undefined) throw new Error("expected Fastify's request listener");
  server.removeListener('request', fastify);
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) =>
    path(req, res, fastify),
  );
}
