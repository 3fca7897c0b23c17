import Fastify, { type FastifyInstance } from 'fastify';
import { type Socket, connect } from 'node:net';
import { closeSilentConnections } from '../../services/shared/connection-guard';
import { answerOutsideFastify } from '../../services/shared/framework-errors';
import { SERVER_TIMEOUTS, baseFastifyOptions } from '../../services/shared/http-server';
import { waitFor } from '../support/ports';
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

/**
 * A connection that writes `bytes` once connected (nothing when empty), then `then` with its
 * socket: what the server answered, and when it closed.
 */
function client(port: number, bytes: string, then: (socket: Socket) => void = () => undefined) {
  let answer = '';
  const socket = connect(port, '127.0.0.1', () => {
    if (bytes) socket.write(bytes);
    then(socket);
  });
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(answer)));
  return { closed };
}

/**
 * `http_silent_connections_closed_total` (`onClosed` of the guard, which the services count)
 * counts every connection the server closed before a request arrived on it, whichever part of
 * the stack closed it. Here the guard's timeout is shorter than Node's header timeout, so the
 * connections that never send a byte are the guard's to close, and those that stall in their
 * request line (which the guard leaves alone, since they spoke) get Node's 408. Connections the
 * client closes, that sent a request, or whose request was malformed (answered 400 at once) are
 * not silent ones.
 */
describe('silent connections: every close of one waiting for a request is counted once', () => {
  const GUARD_MS = 1_000;
  const NODE_HEADERS_TIMEOUT_MS = 3_000;
  const SILENT = 20;
  const STALLED = 20;
  const OTHERS = 5;
  let app: FastifyInstance;
  let port: number;
  let closedWaiting = 0;

  beforeAll(async () => {
    const options = baseFastifyOptions();
    app = Fastify({
      ...options,
      http: { ...options.http, headersTimeout: NODE_HEADERS_TIMEOUT_MS },
    });
    app.get('/ok', async () => ({ ok: true }));
    answerOutsideFastify(app.server);
    closeSilentConnections(app.server, {
      timeoutMs: GUARD_MS,
      onClosed: () => (closedWaiting += 1),
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  });
  afterAll(() => app.close());

  test(`${SILENT} silent and ${STALLED} stalled connections closed by the guard and by Node: counted ${SILENT + STALLED} times`, async () => {
    const times = (n: number, open: () => { closed: Promise<string> }) =>
      Promise.all(Array.from({ length: n }, () => open().closed));
    const [silent, stalled] = await Promise.all([
      times(SILENT, () => client(port, '')),
      times(STALLED, () => client(port, 'GET /ok HT')),
      // Not counted: the client ends or resets the connection, a request arrives (answered,
      // then closed by the server), a malformed request is answered 400, an unsupported
      // `Expect` is answered 417 by Node (which then closes the connection).
      times(OTHERS, () => client(port, '', (socket) => socket.end())),
      times(OTHERS, () => client(port, '', (socket) => socket.resetAndDestroy())),
      times(OTHERS, () => client(port, 'GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')),
      times(OTHERS, () => client(port, 'NOT A REQUEST\r\n\r\n')),
      times(OTHERS, () => client(port, 'GET /ok HTTP/1.1\r\nHost: x\r\nExpect: later\r\n\r\n')),
    ]);
    // Node's 408 closed every stalled connection; the guard, silently, the silent ones (Node
    // would have, later, on a machine too busy to run the guard's check in time).
    expect(stalled.every((answer) => answer.startsWith('HTTP/1.1 408 '))).toBe(true);
    expect(silent.some((answer) => answer === '')).toBe(true);
    // The server has seen every close, its own and the clients'.
    await waitFor(
      () =>
        new Promise<true | undefined>((resolve, reject) =>
          app.server.getConnections((err, count) =>
            err ? reject(err) : resolve(count === 0 ? true : undefined),
          ),
        ),
      { what: 'every connection closed on the server' },
    );
    expect(closedWaiting).toBe(SILENT + STALLED);
  }, 30_000);
});
