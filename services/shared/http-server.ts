import { type FastifyHttpOptions, type FastifyInstance, LogController } from 'fastify';
import type { Server } from 'node:http';
import closeWithGrace from 'close-with-grace';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { Counter } from 'prom-client';
import { closeSilentConnections, watchFileDescriptors } from './connection-guard';
import { answerOutsideFastify, clientErrorHandler, frameworkErrors } from './framework-errors';
import { startMetricsServer } from './metrics';
import { AJV_PLUGINS } from './trimmed-fields';
import { requestIdFrom } from './request-id';
import { requestLoggerFactory } from './request-logger';

/**
 * Server timeouts shared by both services. Keep-alive outlives common load-balancer idle
 * timeouts (60 s on AWS ALB, 65 s ingress-nginx default upstream) so the balancer, not us, closes
 * idle connections; request and header timeouts cut slow-loris clients off. Node enforces those
 * two only when it checks its connections, by default every 30 s, which would let a slow client
 * hold its socket up to 30 s past them; checked every second they hold to within a second.
 */
export const SERVER_TIMEOUTS = {
  keepAliveTimeout: 72_000,
  requestTimeout: 30_000,
  headersTimeout: 10_000,
  connectionsCheckingInterval: 1_000,
} as const;

/**
 * Fastify options both services start from. Fastify's defaults do the rest, and are relied on:
 * `return503OnClosing` and `forceCloseConnections: 'idle'` for the shutdown sequence, Ajv's
 * `removeAdditional` (so `category[$ne]=…` is dropped, never read) and `coerceTypes`.
 */
export function baseFastifyOptions(): FastifyHttpOptions<Server> {
  return {
    keepAliveTimeout: SERVER_TIMEOUTS.keepAliveTimeout,
    requestTimeout: SERVER_TIMEOUTS.requestTimeout,
    // No Host header is not worth Node's bodiless 400: the request is answered like any other.
    http: {
      headersTimeout: SERVER_TIMEOUTS.headersTimeout,
      connectionsCheckingInterval: SERVER_TIMEOUTS.connectionsCheckingInterval,
      requireHostHeader: false,
    },
    genReqId: requestIdFrom,
    childLoggerFactory: requestLoggerFactory,
    ajv: { plugins: AJV_PLUGINS },
    // Path parameters up to this length reach the route, whose schema answers 400 naming the
    // parameter; only absurd lengths stop at the router (414).
    routerOptions: { maxParamLength: 2_048 },
    frameworkErrors,
    clientErrorHandler,
    // A `__proto__` key (or `constructor.prototype`) in a JSON body is dropped, never set: an
    // unknown field like any other (ignored), where Fastify's default refuses the whole body.
    onProtoPoisoning: 'remove',
    onConstructorPoisoning: 'remove',
    // One line per request comes from request-log.ts instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'reqId' }),
  };
}

export interface RunOptions {
  app: FastifyInstance;
  port: number;
  host: string;
  /** How long readiness fails before the listener closes (lets endpoints drain). */
  shutdownDelayMs: number;
  /** Time to close once `shutdownDelayMs` has passed; past both the process exits 1. */
  graceMs?: number;
  /** `GET /metrics` of this registry on its own port, for as long as the server runs. */
  metrics: { registry: Registry; port: number };
  /** The tracer, flushed last. */
  telemetry: { shutdown(): Promise<void> } | undefined;
  /** Resources to release after the server has closed (stores, Redis connections). */
  onClosed: () => Promise<void>;
}

/**
 * The shutdown sequence up to a closed server. Readiness fails at once, and from then on every
 * answer carries `Connection: close` (health.ts), during `shutdownDelayMs` as after it. Then the
 * listener closes and idle keep-alive connections with it (Fastify's `forceCloseConnections:
 * 'idle'`); a connection with a request in flight stays open until its answer has gone, which
 * closes it.
 */
export async function drain(app: FastifyInstance, shutdownDelayMs: number): Promise<void> {
  app.draining = true;
  if (shutdownDelayMs > 0) await new Promise((r) => setTimeout(r, shutdownDelayMs));
  await app.close();
}

/**
 * Listens and installs the shutdown sequence: on SIGTERM/SIGINT the server drains (above),
 * releases its resources and exits 0.
 */
export async function runServer({
  app,
  port,
  host,
  shutdownDelayMs,
  graceMs = 25_000,
  metrics,
  telemetry,
  onClosed,
}: RunOptions): Promise<void> {
  const metricsServer = await startMetricsServer(metrics.registry, metrics.port, host);
  answerOutsideFastify(app.server);
  // close-with-grace's timer starts at the signal, so it covers the drain delay as well.
  closeWithGrace({ delay: shutdownDelayMs + graceMs, logger: app.log }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an error');
    app.log.info({ signal, shutdownDelayMs }, 'shutdown started');
    await drain(app, shutdownDelayMs);
    await onClosed();
    // Prometheus keeps its scrape connection alive and scrapes again within its interval: a
    // scrape in flight at close() would hold the metrics server open until the grace ran out.
    await new Promise((resolve) => {
      metricsServer.close(resolve);
      metricsServer.closeAllConnections();
    });
    await telemetry?.shutdown();
    app.log.info('shutdown complete');
  });
  const silentClosed = new Counter({
    name: 'http_silent_connections_closed_total',
    help: 'Connections closed waiting for a request: no byte, or headers unfinished, within the header timeout',
    registers: [metrics.registry],
  });
  closeSilentConnections(app.server, {
    timeoutMs: SERVER_TIMEOUTS.headersTimeout,
    onClosed: () => silentClosed.inc(),
  });
  const unwatchDescriptors = watchFileDescriptors(app.log);
  app.server.once('close', unwatchDescriptors);
  await app.listen({ port, host });
  // The start-up lines (settings, listening) are news now, not with the next batch of lines.
  (app.log as Partial<Pick<Logger, 'flush'>>).flush?.();
}
