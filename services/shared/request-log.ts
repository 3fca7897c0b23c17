import { isSpanContextValid } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Logger } from 'pino';
import './caller';
import { requestSpan } from './span-attributes';

/**
 * `trace_id` and `span_id` of the request's SERVER span on every line of the request, bound to
 * its logger once the span has started (@fastify/otel's onRequest hook comes first). For the
 * gateway, which keeps the active context only within synchronous code; the catalog's logger
 * reads them from the active span (logger.ts).
 */
function bindTraceIds(request: FastifyRequest): void {
  const spanContext = requestSpan(request)?.spanContext();
  if (spanContext && isSpanContextValid(spanContext))
    // The services log through pino (logger.ts), whose child loggers take more bindings.
    (request.log as Logger).setBindings({
      trace_id: spanContext.traceId,
      span_id: spanContext.spanId,
    });
}

/**
 * One log line per request, written when the response has gone: route template, status,
 * duration and tier. Fastify's own two lines per request are turned off in favour of this one.
 */
export const requestLogPlugin = fp<{ traceIdsFromRequest?: boolean }>(
  async function requestLog(app: FastifyInstance, { traceIdsFromRequest = false }) {
    if (traceIdsFromRequest) {
      app.addHook('onRequest', (request, _reply, done) => {
        bindTraceIds(request);
        done();
      });
    }
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info(
        {
          method: request.method,
          route: request.routeOptions.url ?? 'unmatched',
          status: reply.statusCode,
          durationMs: Math.round(reply.elapsedTime * 100) / 100,
          tier: request.caller?.tier,
        },
        'request completed',
      );
      done();
    });
  },
  { name: 'request-log' },
);
