import Fastify, { LogController } from 'fastify';
import pino from 'pino';
import { loggerOptions } from '../../services/shared/logger';
import { requestLogPlugin } from '../../services/shared/request-log';

/** An app with the access-line plugin, logging at `level` through the services' options. */
async function appWithAccessLine(lines: Record<string, unknown>[], level: string) {
  const logger = pino(loggerOptions({ service: 'test', level, pretty: false, traceIds: false }), {
    write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>),
  });
  const app = Fastify({
    loggerInstance: logger,
    // As the services: Fastify's own request lines off, the access line is the plugin's.
    logController: new LogController({ disableRequestLogging: true }),
  });
  await app.register(requestLogPlugin);
  return app;
}

/** An app logging at `info` into `lines`, with a probe route and a careless log line. */
async function appLoggingTo(lines: Record<string, unknown>[]) {
  const app = await appWithAccessLine(lines, 'info');
  app.get('/v1/tools', async () => ({ ok: true }));
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.post('/v1/register', async (request) => {
    // A careless line: the key sits in a nested field.
    request.log.info({ issued: { apiKey: 'tdk_do_not_log_me' } }, 'key issued');
    return { ok: true };
  });
  return app;
}

describe('the access line (one per request)', () => {
  test('carries the request id, method, route template, status and duration', async () => {
    const lines: Record<string, unknown>[] = [];
    const app = await appLoggingTo(lines);
    expect((await app.inject({ url: '/v1/tools?limit=5' })).statusCode).toBe(200);
    const access = lines.filter((l) => l.msg === 'request completed');
    expect(access).toHaveLength(1);
    expect(access[0]).toMatchObject({
      level: 'info',
      service: 'test',
      reqId: expect.any(String),
      method: 'GET',
      route: '/v1/tools',
      status: 200,
    });
    expect(typeof access[0]!.durationMs).toBe('number');
    // No caller, no tier; no span, no trace fields.
    expect(access[0]).not.toHaveProperty('tier');
    expect(access[0]).not.toHaveProperty('trace_id');
  });

  test("a route's log level still decides: a probe at warn writes no access line", async () => {
    const lines: Record<string, unknown>[] = [];
    const app = await appLoggingTo(lines);
    expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);
    expect(lines.filter((l) => l.msg === 'request completed')).toEqual([]);
  });

  test("the request's other lines are still redacted, nested fields included", async () => {
    const lines: Record<string, unknown>[] = [];
    const app = await appLoggingTo(lines);
    await app.inject({ method: 'POST', url: '/v1/register', payload: {} });
    expect(JSON.stringify(lines)).not.toContain('tdk_do_not_log_me');
    expect(lines.find((l) => l.msg === 'key issued')).toMatchObject({
      issued: { apiKey: '[redacted]' },
    });
    expect(lines.filter((l) => l.msg === 'request completed')).toHaveLength(1);
  });
});

test("a route logging above the service's level still gets its access line (the request's logger decides)", async () => {
  const lines: Record<string, unknown>[] = [];
  const app = await appWithAccessLine(lines, 'warn');
  app.get('/v1/debugged', { logLevel: 'info' }, async () => ({ ok: true }));
  app.get('/v1/quiet', async () => ({ ok: true }));
  await app.inject({ url: '/v1/debugged' });
  await app.inject({ url: '/v1/quiet' });
  expect(lines.filter((l) => l.msg === 'request completed').map((l) => l.route)).toEqual([
    '/v1/debugged',
  ]);
});
