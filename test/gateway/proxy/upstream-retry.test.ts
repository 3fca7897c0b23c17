import { createServer, type Socket } from 'node:net';
import { inProcessGateway, registerInProcess } from '../../support/gateway';
import { freePort } from '../../support/ports';

type Gateway = Awaited<ReturnType<typeof inProcessGateway>>;
/** What the upstream does with the n-th request it reads (from 1). */
type Behaviour = (socket: Socket, n: number) => void;

const BODY = '{"data":[]}';
const answer = (socket: Socket) =>
  socket.write(
    `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`,
  );

/**
 * A catalog stand-in on raw TCP, to close or reset a connection at an exact point of a `/v1/` call.
 */
async function scriptedUpstream(behaviour: Behaviour) {
  let requests = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      for (const head of chunk.toString().split('\r\n\r\n').slice(0, -1)) {
        // The gateway's own calls (the catalog's version and readiness) are answered, not counted.
        if (!/^GET \/v1\//.test(head)) {
          answer(socket);
          continue;
        }
        requests += 1;
        behaviour(socket, requests);
      }
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    close: () => {
      // The gateway's pool keeps its connections open past its own close.
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * The retry rule of the catalog proxy: a GET whose connection closed or reset before any byte
 * of the answer is sent again, once; a failure after the answer began is not retried.
 */
describe('catalog calls lost in transit', () => {
  const cases: [string, Behaviour, { status: number; requests: number; retries: string }][] = [
    [
      'reset before any answer: sent again, answered',
      (socket, n) => (n === 1 ? socket.resetAndDestroy() : answer(socket)),
      { status: 200, requests: 2, retries: 'ECONNRESET' },
    ],
    [
      'closed before any answer: sent again, answered',
      (socket, n) => (n === 1 ? socket.end() : answer(socket)),
      { status: 200, requests: 2, retries: 'UND_ERR_SOCKET' },
    ],
    [
      'reset again on the retry: once only, then 502',
      (socket) => socket.resetAndDestroy(),
      { status: 502, requests: 2, retries: 'ECONNRESET' },
    ],
  ];

  test.each(cases)('%s', async (_name, behaviour, expected) => {
    const upstream = await scriptedUpstream(behaviour);
    let gateway: Gateway | undefined;
    try {
      gateway = await inProcessGateway({ CATALOG_URL: upstream.url });
      const key = await registerInProcess(gateway.app, `retry-${expected.retries}@example.com`);
      const response = await gateway.app.inject({
        url: '/v1/tools',
        headers: { 'x-api-key': key },
      });
      expect(response.statusCode).toBe(expected.status);
      expect(upstream.requests()).toBe(expected.requests);
      const metrics = await gateway.deps.registry.metrics();
      expect(metrics).toMatch(
        new RegExp(`^gateway_upstream_retries_total\\{code="${expected.retries}"[^}]*\\} 1$`, 'm'),
      );
    } finally {
      await gateway?.close();
      await upstream.close();
    }
  });

  test('reset after the answer began: not sent again, a 502', async () => {
    const upstream = await scriptedUpstream((socket) => {
      socket.write(
        'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
      );
      setTimeout(() => socket.resetAndDestroy(), 50);
    });
    let gateway: Gateway | undefined;
    try {
      gateway = await inProcessGateway({ CATALOG_URL: upstream.url });
      const key = await registerInProcess(gateway.app, 'retry-late@example.com');
      const response = await gateway.app.inject({
        url: '/v1/tools',
        headers: { 'x-api-key': key },
      });
      // A small answer is read whole before anything is sent: its loss is the API's 502.
      expect(response.statusCode).toBe(502);
      expect(response.json()).toMatchObject({ error: expect.any(String) });
      expect(upstream.requests()).toBe(1);
      expect(await gateway.deps.registry.metrics()).not.toMatch(
        /^gateway_upstream_retries_total\{/m,
      );
    } finally {
      await gateway?.close();
      await upstream.close();
    }
  });
});
