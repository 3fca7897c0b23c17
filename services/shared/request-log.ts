import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import './caller';

/**
 * One log line per request, written when the response has gone: route template, status,
 * duration and tier. Fastify's own two lines per request are turned off in favour of this one.
 */
export const requestLogPlugin = fp(
  async function requestLog(app: FastifyInstance) {
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
