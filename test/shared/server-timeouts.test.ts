import Fastify, { type FastifyInstance } from 'fastify';
import { connect } from 'node:net';
import { SERVER_TIMEOUTS, baseFastifyOptions } from '../../services/shared/http-server';
import { within } from '../support/waits';

const HEADERS_TIMEOUT_MS = 1_000;
const REQUEST_TIMEOUT_MS = 2_000;
/**
 * How late past its timeout a stalled client may still be connected: until the next connection
 * check, late by a busy machine. Still well short of Node's default check, 30 s later.
 */
const SLACK_MS = within(SERVER_TIMEOUTS.connectionsCheckingInterval);

/**
 * Sends `bytes` and stalls; resolves when the server closes the connection, with what it
 * answered and after how long, or with `cut: false` once `deadlineMs` has passed.
 */
function stall(port: number, bytes: string, deadlineMs: number) {
  return new Promise<{ cut: boolean; afterMs: number; answer: string }>((resolve) => {
    const started = performance.now();
    let answer = '';
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    const finish = (cut: boolean) => {
      clearTimeout(deadline);
      socket.destroy();
      resolve({ cut, afterMs: performance.now() - started, answer });
    };
    const deadline = setTimeout(() => finish(false), deadlineMs);
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => finish(true));
  });
}

/**
 * Slow clients are cut off when the configured timeouts say, not up to 30 s later when Node's
 * default connection check would next run. The timeouts are shortened here to keep the test
 * fast; the check interval is the one the services run with.
 */
describe('server timeouts hold', () => {
  let app: FastifyInstance;
  let port: number;

  beforeAll(async () => {
    const options = baseFastifyOptions();
    app = Fastify({
      ...options,
      requestTimeout: REQUEST_TIMEOUT_MS,
      http: { ...options.http, headersTimeout: HEADERS_TIMEOUT_MS },
    });
    app.post('/echo', async (request) => request.body);
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  });
  afterAll(() => app.close());

  test('half a request line, then nothing: 408 soon after headersTimeout', async () => {
    const result = await stall(port, 'GET /v1/to', HEADERS_TIMEOUT_MS + SLACK_MS);
    expect(result.cut).toBe(true);
    expect(result.answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(result.afterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
  });

  test('headers sent, body stalled: cut off soon after requestTimeout', async () => {
    const result = await stall(
      port,
      'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a"',
      REQUEST_TIMEOUT_MS + SLACK_MS,
    );
    expect(result.cut).toBe(true);
    expect(result.afterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
  });
});
