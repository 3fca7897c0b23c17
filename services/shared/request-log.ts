import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import pino, { type Logger } from 'pino';
import { traceFieldsOf } from './logger';
import { requestSpan } from './span-attributes';

const INFO = 30;
const {
  chindingsSym,
  formattersSym,
  hooksSym,
  lsCacheSym,
  mixinSym,
  needsMetadataGsym,
  streamSym,
  timeSym,
} = pino.symbols;

/** A part of a pino logger's (or its stream's) state, by `pino.symbols`, exposed for integrations. */
function part<T>(holder: object, symbol: symbol): T {
  return (holder as Record<symbol, unknown>)[symbol] as T;
}

/** The stream a pino logger writes its lines to. */
interface LineStream {
  write(line: string): void;
}

/**
 * The JSON strings of the line's values from bounded sets (route templates, methods, tiers), made
 * once each.
 */
const quoted = new Map<string, string>();
function quote(text: string): string {
  let json = quoted.get(text);
  if (json === undefined) quoted.set(text, (json = JSON.stringify(text)));
  return json;
}

/**
 * Writes a request's access line. The line's fields are fixed, so it is put together directly,
 * byte for byte the line pino's generic serializer makes of the same fields (which walks and
 * escapes every key and value on every request, the largest single cost of the line), and handed
 * to the logger's stream. A logger whose lines pino must process further (a mixin, a stream that
 * takes metadata, a write hook) gets its line through pino.
 */
function accessLineWriter(logger: Logger): (request: FastifyRequest, reply: FastifyReply) => void {
  const stream = part<LineStream>(logger, streamSym);
  if (
    part<unknown>(logger, mixinSym) ||
    part<boolean | undefined>(stream, needsMetadataGsym) === true ||
    part<{ streamWrite?: unknown }>(logger, hooksSym).streamWrite !== undefined ||
    part<{ log?: unknown }>(logger, formattersSym).log !== undefined
  ) {
    return (request, reply) => logger.info(accessFields(request, reply), ACCESS_MESSAGE);
  }
  const head = part<Record<number, string>>(logger, lsCacheSym)[INFO]!;
  const chindings = part<string>(logger, chindingsSym);
  const time = part<() => string>(logger, timeSym);
  const tail = `,"msg":${JSON.stringify(ACCESS_MESSAGE)}}\n`;
  return (request, reply) => {
    const { traceIds } = request;
    const tier = request.caller?.tier;
    stream.write(
      `${head}${time()}${chindings},"reqId":${JSON.stringify(request.id)}` +
        (traceIds ? `,"trace_id":"${traceIds.trace_id}","span_id":"${traceIds.span_id}"` : '') +
        `,"method":${quote(request.method)},"route":${quote(request.routeOptions.url ?? 'unmatched')}` +
        `,"status":${reply.statusCode},"durationMs":${duration(reply)}` +
        (tier === undefined ? '' : `,"tier":${quote(tier)}`) +
        tail,
    );
  };
}

const ACCESS_MESSAGE = 'request completed';

/** Milliseconds to two decimals. */
function duration(reply: FastifyReply): number {
  return Math.round(reply.elapsedTime * 100) / 100;
}

/** The access line's fields, for a logger pino writes itself. */
function accessFields(request: FastifyRequest, reply: FastifyReply) {
  return {
    reqId: request.id,
    // Spread, not set to undefined: at the catalog the fields come from the mixin, which a field
    // of the line itself, even undefined, would override.
    ...request.traceIds,
    method: request.method,
    route: request.routeOptions.url ?? 'unmatched',
    status: reply.statusCode,
    durationMs: duration(reply),
    tier: request.caller?.tier,
  };
}

/**
 * One log line per request, written when the response has gone: route template, status,
 * duration and tier. Fastify's own two lines per request are turned off in favour of this one.
 *
 * It is written through a child logger without redaction: its fields are fixed and none can hold
 * a secret, while the redaction every other line gets (logger.ts) runs its `*.apiKey` wildcard
 * over each field, a cost on every request (docs/performance.md#current-figures). The
 * request's own logger still decides whether it is written (a route's `logLevel`).
 */
export const requestLogPlugin = fp<{ traceIdsFromRequest?: boolean }>(
  async function requestLog(app: FastifyInstance, { traceIdsFromRequest = false }) {
    const root = app.log as Logger;
    // Without a logger (`logger: false`) Fastify's stand-in has no levels and writes nothing.
    if (typeof root.isLevelEnabled !== 'function') return;
    // At the lowest level: whether the line is written is the request's logger's decision alone,
    // which a route's `logLevel` may set below the service's.
    const accessLog = root.child({}, { redact: [], level: 'trace' });
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
    const write = accessLineWriter(accessLog);
    app.addHook('onResponse', (request, reply, done) => {
      if ((request.log as Logger).isLevelEnabled('info')) write(request, reply);
      done();
    });
  },
  { name: 'request-log' },
);
