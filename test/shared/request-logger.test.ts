import Fastify, { LogController } from 'fastify';
import pino from 'pino';
import { loggerOptions } from '../../services/shared/logger';
import { requestLogPlugin } from '../../services/shared/request-log';
import { requestLoggerFactory } from '../../services/shared/request-logger';

type Line = Record<string, unknown>;

/** As the services build theirs: the access line, and each request's logger made when used. */
async function appLoggingTo(lines: Line[]) {
  const logger = pino(
    loggerOptions({ service: 'test', level: 'info', pretty: false, traceIds: false }),
    { write: (line: string) => lines.push(JSON.parse(line) as Line) },
  );
  const app = Fastify({
    loggerInstance: logger,
    childLoggerFactory: requestLoggerFactory,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'reqId' }),
  });
  await app.register(requestLogPlugin);
  app.get('/quiet', async () => ({ ok: true }));
  app.get('/talks', async (request) => {
    request.log.info({ issued: { apiKey: 'tdk_do_not_log_me' } }, 'said once');
    request.log.debug('below the level');
    (request.log as pino.Logger).setBindings({ trace_id: 'abc' });
    request.log.warn('said after new bindings');
    return { ok: true };
  });
  app.get('/probe', { logLevel: 'warn' }, async (request) => {
    request.log.info('below the route level');
    request.log.warn({ isInfoOn: request.log.isLevelEnabled('info') }, 'probe warning');
    return { ok: true };
  });
  return { app, logger };
}

describe("a request's logger (made when first used)", () => {
  test('a request that writes nothing of its own makes no pino child; its access line is written', async () => {
    const lines: Line[] = [];
    const { app, logger } = await appLoggingTo(lines);
    await app.ready();
    const child = jest.spyOn(logger, 'child');
    expect((await app.inject({ url: '/quiet' })).statusCode).toBe(200);
    expect(child).not.toHaveBeenCalled();
    expect(lines.filter((l) => l.msg === 'request completed')).toHaveLength(1);
  });

  test('its lines carry the request id, are redacted, keep the level and take new bindings', async () => {
    const lines: Line[] = [];
    const { app, logger } = await appLoggingTo(lines);
    await app.ready();
    const child = jest.spyOn(logger, 'child');
    const response = await app.inject({ url: '/talks', headers: { 'x-request-id': 'req-1' } });
    expect(response.statusCode).toBe(200);
    expect(child).toHaveBeenCalledTimes(1);
    const own = lines.filter((l) => l.msg !== 'request completed');
    expect(own).toEqual([
      expect.objectContaining({
        level: 'info',
        reqId: expect.any(String),
        msg: 'said once',
        issued: { apiKey: '[redacted]' },
      }),
      expect.objectContaining({ level: 'warn', trace_id: 'abc', msg: 'said after new bindings' }),
    ]);
    const access = lines.find((l) => l.msg === 'request completed');
    expect(own[0]!.reqId).toBe(access!.reqId);
  });

  test("a route's log level holds for its lines, its level checks and its access line", async () => {
    const lines: Line[] = [];
    const { app } = await appLoggingTo(lines);
    expect((await app.inject({ url: '/probe' })).statusCode).toBe(200);
    expect(lines).toEqual([
      expect.objectContaining({ level: 'warn', msg: 'probe warning', isInfoOn: false }),
    ]);
  });
});
