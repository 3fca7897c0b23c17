import type { FastifyInstance } from 'fastify';
import { answerOutsideFastify } from '../../services/shared/framework-errors';
import { asTier, buildTestCatalog } from '../support/catalog';
import { rawRequest } from '../support/raw-http';

/**
 * Errors raised before a route runs still answer JSON `{ "error" }` (docs/api.md#errors,
 * docs/api.md#parameters-and-validation).
 */
describe('errors from Fastify and Node before routing', () => {
  let app: FastifyInstance;
  let port: number;
  const tier = asTier('pro');

  beforeAll(async () => {
    app = await buildTestCatalog();
    await app.listen({ port: 0, host: '127.0.0.1' });
    answerOutsideFastify(app.server);
    port = (app.server.address() as { port: number }).port;
  });
  afterAll(() => app.close());

  const get = (url: string) => fetch(`http://127.0.0.1:${port}${url}`, { headers: tier });

  test('a badly percent-encoded path is 400 JSON', async () => {
    const response = await get('/v1/tools/%E0%A4%A');
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: 'The URL is not validly percent-encoded' });
  });

  test('a long slug reaches the route and is 400 naming the parameter', async () => {
    const response = await get(`/v1/tools/${'a'.repeat(101)}`);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: "Invalid path parameter 'slug': must be a string of 1 to 100 characters",
    });
  });

  test('an absurdly long path segment is 414 JSON', async () => {
    const response = await get(`/v1/tools/${'a'.repeat(3_000)}`);
    expect(response.status).toBe(414);
    expect(await response.json()).toEqual({ error: 'A path segment of the URL is too long' });
  });

  test.each([
    [
      'headers over Node’s limit are 431 JSON, and the connection closes',
      `GET /v1/tools HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      { error: 'The request headers are too large' },
    ],
    [
      'an Expect other than 100-continue is 417 JSON',
      'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nConnection: close\r\n\r\n',
      417,
      { error: 'Only "Expect: 100-continue" is supported' },
    ],
    [
      'CONNECT is 405 JSON',
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
      405,
      { error: 'CONNECT is not supported' },
    ],
    [
      'a request without a Host header is answered like any other',
      'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n',
      200,
      { status: 'ok' },
    ],
    [
      'a malformed request line is 400 JSON',
      'NOT HTTP AT ALL\r\n\r\n',
      400,
      { error: 'The request is malformed' },
    ],
  ])('%s', async (_case, request, expectedStatus, expectedBody) => {
    const { status, body } = await rawRequest(port, request);
    expect(status).toBe(expectedStatus);
    expect(JSON.parse(body)).toEqual(expectedBody);
  });
});
