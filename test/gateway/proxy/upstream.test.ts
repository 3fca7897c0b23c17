import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { freePort } from '../../support/ports';
import { rawRequest } from '../../support/raw-http';
import { ServiceProcess, registerKey, startStack, tempDataDir } from '../../support/services';

type Stack = Awaited<ReturnType<typeof startStack>>;

/**
 * An upstream that records what the gateway forwards and answers after `delayMs`: it stands
 * where the catalog would, to see the exact headers and to be slow on purpose.
 */
async function recordingUpstream(delayMs = 0) {
  const seen: IncomingHttpHeaders[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req.headers);
    setTimeout(
      () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}'),
      delayMs,
    );
  });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise((r) => server.close(r)),
  };
}

describe('identity headers (docs/api.md#health-request-ids-and-tracing)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.stop());

  test('client-supplied identity and tier headers are ignored', async () => {
    const key = await registerKey(stack.gateway.url);
    const response = await fetch(`${stack.gateway.url}/v1/compare/langchain/llamaindex`, {
      headers: {
        'x-api-key': key,
        'x-caller-tier': 'enterprise',
        'x-caller-key-id': 'key_someoneelse',
        'x-internal-token': 'guessing-the-token-here',
      },
    });
    expect(response.status).toBe(403);
    const list = await fetch(`${stack.gateway.url}/v1/tools/langchain`, {
      headers: { 'x-api-key': key, 'x-caller-tier': 'pro' },
    });
    expect(Object.keys(((await list.json()) as { data: object }).data)).not.toContain(
      'longDescription',
    );
  });

  test('X-Request-Id is accepted and echoed, or generated', async () => {
    const key = await registerKey(stack.gateway.url);
    const given = await fetch(`${stack.gateway.url}/v1/categories`, {
      headers: { 'x-api-key': key, 'x-request-id': 'client-req-42' },
    });
    expect(given.headers.get('x-request-id')).toBe('client-req-42');
    const made = await fetch(`${stack.gateway.url}/v1/categories`, {
      headers: { 'x-api-key': key },
    });
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("a malformed query string is the catalog's 400 naming the parameter, never a 500", async () => {
    const key = await registerKey(stack.gateway.url);
    const get = (path: string) =>
      fetch(`${stack.gateway.url}${path}`, { headers: { 'x-api-key': key } });
    const badLimit = await get('/v1/tools?limit=%');
    expect(badLimit.status).toBe(400);
    expect(await badLimit.json()).toEqual({
      error: "Invalid query parameter 'limit': must be an integer from 1 to 100",
    });
    for (const path of ['/v1/tools?%%%', '/v1/search?q=%C0%C1', '/v1/categories?x=%']) {
      const response = await get(path);
      expect([path, response.status]).toEqual([path, 200]);
      await response.arrayBuffer();
    }
  });

  test('a path that decodes to .. segments is a 400 of the API, not a proxy error', async () => {
    const key = await registerKey(stack.gateway.url);
    const response = await fetch(`${stack.gateway.url}/v1/tools/..%2F..%2Fetc`, {
      headers: { 'x-api-key': key },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: "The URL path may not contain '..' segments" });
  });

  test('a request line in absolute form is forwarded by its path', async () => {
    const key = await registerKey(stack.gateway.url);
    const { status, body } = await rawRequest(
      stack.gateway.port,
      `GET http://tools.example.com/v1/tools/langchain?x=1 HTTP/1.1\r\nHost: tools.example.com\r\n` +
        `x-api-key: ${key}\r\nConnection: close\r\n\r\n`,
    );
    expect(status).toBe(200);
    expect(body).toContain('"slug":"langchain"');
  });

  test.each([
    ['Expect', '100-continue'],
    ['Keep-Alive', 'timeout=5'],
    ['Upgrade', 'websocket'],
    ['TE', 'trailers'],
  ])('a client %s header is not forwarded: the catalog still answers', async (name, value) => {
    const key = await registerKey(stack.gateway.url);
    const { status, body } = await rawRequest(
      stack.gateway.port,
      `GET /v1/categories HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\n${name}: ${value}\r\n` +
        'Connection: close\r\n\r\n',
    );
    expect(status).toBe(200);
    expect(body).toContain('"data"');
  });

  test('an unknown route is 404 whatever the body, counted with its headers when keyed', async () => {
    const key = await registerKey(stack.gateway.url);
    const send = (method: string, path: string, body?: string, type = 'application/json') =>
      fetch(`${stack.gateway.url}${path}`, {
        method,
        headers: { 'x-api-key': key, 'content-type': type },
        ...(body === undefined ? {} : { body }),
      });
    const badJson = await send('POST', '/v1/nothing', '{bad');
    expect([badJson.status, badJson.headers.get('x-ratelimit-remaining')]).toEqual([404, '99']);
    expect(await badJson.json()).toEqual({
      error: 'Route POST /v1/nothing does not exist',
    });
    const text = await send('PUT', '/v1/export', 'hi', 'text/plain');
    expect([text.status, text.headers.get('x-ratelimit-remaining')]).toEqual([404, '98']);
    await text.arrayBuffer();
    const otherVersion = await send('GET', '/v2/tools');
    expect([otherVersion.status, otherVersion.headers.get('x-ratelimit-remaining')]).toEqual([
      404,
      '97',
    ]);
    await otherVersion.arrayBuffer();
    const anonymous = await fetch(`${stack.gateway.url}/v2/tools`);
    expect([anonymous.status, anonymous.headers.get('x-ratelimit-remaining')]).toEqual([404, null]);
    await anonymous.arrayBuffer();
  });

  test('a bare OPTIONS, not a preflight, is a 204 too, never a text/plain 400', async () => {
    const response = await fetch(`${stack.gateway.url}/v1/tools`, { method: 'OPTIONS' });
    expect(response.status).toBe(204);
  });

  test('the catalog refuses a request that did not come through the gateway', async () => {
    const response = await fetch(`${stack.catalog.url}/v1/tools`, {
      headers: { 'x-caller-tier': 'enterprise' },
    });
    expect(response.status).toBe(401);
  });
});

describe('what the gateway forwards', () => {
  test('its own identity headers and token, the request id, one traceparent at most, never the key', async () => {
    const upstream = await recordingUpstream();
    const gateway = await ServiceProcess.start('gateway', {
      CATALOG_URL: upstream.url,
      DATA_DIR: tempDataDir(),
      REGISTRATIONS_PER_HOUR: '1000',
    });
    try {
      const key = await registerKey(gateway.url);
      await fetch(`${gateway.url}/v1/tools`, {
        headers: {
          'x-api-key': key,
          'x-caller-tier': 'enterprise',
          'x-request-id': 'abc-123',
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        },
      });
      // The proxied request, not the gateway's own calls (readiness, the catalog's version).
      const headers = upstream.seen.findLast((seen) => seen['x-caller-tier'] !== undefined)!;
      expect(headers['x-caller-tier']).toBe('free');
      expect(headers['x-caller-key-id']).toMatch(/^key_/);
      expect(headers['x-internal-token']).toBe('integration-test-internal-token');
      expect(headers['x-request-id']).toBe('abc-123');
      expect(headers['x-api-key']).toBeUndefined();
      // One traceparent, continuing the client's trace (the tracer's own, not a second copy).
      expect(typeof headers.traceparent).toBe('string');
      expect(headers.traceparent).toMatch(
        /^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-0[01]$/,
      );
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});

describe('upstream failures are JSON 5xx with rate-limit headers (docs/api.md#parameters-and-validation)', () => {
  test('catalog down: 502 or 503', async () => {
    // Never ready without its catalog: alive is enough here.
    const gateway = await ServiceProcess.start(
      'gateway',
      {
        CATALOG_URL: `http://127.0.0.1:${await freePort()}`,
        DATA_DIR: tempDataDir(),
        REGISTRATIONS_PER_HOUR: '1000',
      },
      { waitReady: false },
    );
    try {
      const key = await registerKey(gateway.url);
      const response = await fetch(`${gateway.url}/v1/tools`, { headers: { 'x-api-key': key } });
      expect([502, 503]).toContain(response.status);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(Object.keys((await response.json()) as object)).toEqual(['error']);
      expect(response.headers.get('x-ratelimit-remaining')).toBe('99');
      expect(await gateway.metrics()).toMatch(
        /^gateway_upstream_errors_total\{kind="unavailable",service="gateway"\} 1/m,
      );
    } finally {
      await gateway.stop();
    }
  });

  test('catalog slower than UPSTREAM_TIMEOUT_MS: 504', async () => {
    const upstream = await recordingUpstream(1_500);
    // Its readiness probe of the catalog times out too: alive is enough here.
    const gateway = await ServiceProcess.start(
      'gateway',
      {
        CATALOG_URL: upstream.url,
        UPSTREAM_TIMEOUT_MS: '300',
        DATA_DIR: tempDataDir(),
        REGISTRATIONS_PER_HOUR: '1000',
      },
      { waitReady: false },
    );
    try {
      const key = await registerKey(gateway.url);
      const response = await fetch(`${gateway.url}/v1/tools`, { headers: { 'x-api-key': key } });
      expect(response.status).toBe(504);
      expect(Object.keys((await response.json()) as object)).toEqual(['error']);
      expect(response.headers.get('x-ratelimit-limit')).toBe('100');
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});
