import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

export interface HealthOptions {
  /** Resolves when every dependency answers; rejects with the reason otherwise. */
  ready: () => Promise<void>;
  /** Why writes cannot succeed now (a full disk), if they cannot; reads are served regardless. */
  writes?: () => string | undefined;
  /** Why quotas are counted per replica now (Redis not answering), if they are; still ready. */
  quotas?: () => string | undefined;
  /**
   * Also answers readiness here, as a route of `config.internal`: only with the internal token
   * (the catalog's INTERNAL_PATHS.readiness).
   */
  internalPath?: string;
}

const Degraded = Type.Object({ status: Type.String(), reason: Type.Optional(Type.String()) });

const HealthBody = Type.Object({
  status: Type.String(),
  reason: Type.Optional(Type.String()),
  writes: Type.Optional(Degraded),
  quotas: Type.Optional(Degraded),
});

/**
 * `GET /healthz` (the process is alive) and `GET /readyz` (dependencies reachable),
 * docs/api.md#health-request-ids-and-tracing; `/readyz` again at `internalPath`, if given.
 */
export const healthPlugin = fp<HealthOptions>(
  async function health(app: FastifyInstance, { ready, writes, quotas, internalPath }) {
    app.decorate('draining', false);
    // While draining, every answer closes its connection, so keep-alive clients move to other
    // replicas between requests instead of meeting a socket closed under them. onSend: after a
    // proxied answer's own headers are copied.
    app.addHook('onSend', (_request, reply, payload, done) => {
      if (app.draining) reply.header('connection', 'close');
      done(null, payload);
    });
    const schema = {
      hide: true,
      response: { 200: HealthBody, 503: HealthBody },
    };

    app.get('/healthz', { schema, logLevel: 'warn', config: { public: true } }, async () => ({
      status: 'ok',
    }));

    const readiness = async (request: FastifyRequest, reply: FastifyReply) => {
      if (app.draining) return reply.code(503).send({ status: 'draining' });
      try {
        await ready();
        // Still ready: reads go on, and requests are admitted; the body says what is degraded.
        const writeProblem = writes?.();
        const quotaProblem = quotas?.();
        return {
          status: 'ready',
          ...(writeProblem !== undefined && {
            writes: { status: 'unavailable', reason: writeProblem },
          }),
          ...(quotaProblem !== undefined && {
            quotas: { status: 'per-replica', reason: quotaProblem },
          }),
        };
      } catch (err) {
        request.log.warn({ err }, 'readiness check failed');
        return reply.code(503).send({ status: 'unavailable', reason: (err as Error).message });
      }
    };
    app.get('/readyz', { schema, logLevel: 'warn', config: { public: true } }, readiness);
    // The same answer behind the internal token, for the gateway: the token is checked before it.
    if (internalPath !== undefined) {
      app.get(internalPath, { schema, logLevel: 'warn', config: { internal: true } }, readiness);
    }
  },
  { name: 'health' },
);
