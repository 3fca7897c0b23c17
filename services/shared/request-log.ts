import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Logger } from 'pino';
import { type TraceFields, traceFieldsOf } from './logger';
import { requestSpan } from './span-attributes';

/** What one request's access line says; the trace ids when the request has them. */
export interface AccessLine {
  reqId: string;
  method: string;
  route: string;
  status: number;
  elapsedMs: number;
  tier: string | undefined;
  traceIds?: TraceFields | null;
}

/**
 * The access log of a service's root logger: at the lowest level, so whether a line is written is
 * the request's logger's decision alone, which a route's `logLevel` may set below the service's.
 *
 * It is a child without redaction: its fields are fixed and none can hold a secret, while the
 * redaction every other line gets (logger.ts) runs its `*.apiKey` wildcard over each field, a cost
 * on every request (docs/performance.md#current-figures).
 */
export function accessLogOf(root: Logger): Logger {
  return root.child({}, { redact: [], level: 'trace' });
}

/**
 * Writes one request's line: the one format for Fastify's requests (below) and for the gateway's
 * cached-answer path, which answers before Fastify.
 */
export function writeAccessLine(accessLog: Logger, line: AccessLine): void {
  accessLog.info(
    {
      reqId: line.reqId,
      // Spread, not set to undefined: at the catalog the fields come from the mixin, which a
      // field of the line itself, even undefined, would override.
      ...line.traceIds,
      method: line.method,
      route: line.route,
      status: line.status,
      durationMs: Math.round(line.elapsedMs * 100) / 100,
      tier: line.tier,
    },
    'request completed',
  );
}

/**
 * One log line per request, written when the response has gone: route template, status,
 * duration and tier. Fastify's own two lines per request are turned off in favour of this one.
 * The request's own logger decides whether it is written (a route's `logLevel`).
 */
export const requestLogPlugin = fp<{ traceIdsFromRequest?: boolean }>(
  async function requestLog(app: FastifyInstance, { traceIdsFromRequest = false }) {
    const root = app.log as Logger;
    // Without a logger (`logger: false`) Fastify's stand-in has no levels and writes nothing.
    if (typeof root.isLevelEnabled !== 'function') return;
    const accessLog = accessLogOf(root);
    if (traceIdsFromRequest) {
      app.decorateRequest('traceIds', null);
      app.addHook('onRequest', (request, _reply, done) => {
        // The SERVER span has started (@fastify/otel's onRequest hook comes first). For the
        // gateway, which keeps the active context only within synchronous code; the catalog's
        // logger reads the ids from the active span (logger.ts).
        request.traceIds = traceFieldsOf(requestSpan(request));
        // Every other line of the request carries them too. The services log through pino
        // (logger.ts), whose child loggers take more bindings.
        if (request.traceIds) (request.log as Logger).setBindings(request.traceIds);
        done();
      });
    }
    app.addHook('onResponse', (request, reply, done) => {
      if ((request.log as Logger).isLevelEnabled('info')) {
        writeAccessLine(accessLog, {
          reqId: request.id,
          traceIds: request.traceIds,
          method: request.method,
          route: request.routeOptions.url ?? 'unmatched',
          status: reply.statusCode,
          elapsedMs: reply.elapsedTime,
          tier: request.caller?.tier,
        });
      }
      done();
    });
  },
  { name: 'request-log' },
);
