import { dataset } from '../../support/catalog';
import {
  type Headers,
  type PathGateway,
  comparable,
  preparedThenAsk,
  startPathGateway,
} from '../../support/before-fastify';
import { ServiceProcess, tempDataDir } from '../../support/services';
import { within } from '../../support/waits';

const MODERN = '2026-07-28';
/** The `_meta` envelope a 2026-07-28 client sends with every request. */
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'path-test', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

type Era = 'legacy' | 'modern';

/** A JSON-RPC request as a client of `era` sends it: its body and its headers (the key apart). */
function mcpRequest(
  era: Era,
  id: string | number | undefined,
  method: string,
  params: Record<string, unknown> = {},
): { body: string; headers: Headers } {
  const headers: Headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  if (era === 'modern') {
    headers['mcp-protocol-version'] = MODERN;
    headers['mcp-method'] = method;
    if (typeof params.name === 'string') headers['mcp-name'] = params.name;
  }
  const message = {
    jsonrpc: '2.0',
    ...(id !== undefined && { id }),
    method,
    params: era === 'modern' ? { ...params, _meta: ENVELOPE } : params,
  };
  return { body: JSON.stringify(message), headers };
}

/**
 * The prepared MCP answers (routes/mcp-prepared-path.ts): a `POST /v1/mcp` whose answer the
 * endpoint gave before for the same exchange is answered before Fastify, and must answer exactly
 * as Fastify would. Each request goes once over a socket (the path may answer) and once through
 * `inject` (Fastify always), and the answers are compared; a hook on Fastify's responses tells
 * which path answered.
 */
describe.each([
  ['any origin', '*'],
  ['a list of origins', 'https://app.example'],
])('the prepared MCP answers, CORS for %s', (_name, corsOrigins) => {
  let catalog: ServiceProcess;
  let gateway: PathGateway;

  beforeAll(async () => {
    catalog = await ServiceProcess.start('catalog', { DATA_DIR: tempDataDir() });
    gateway = await startPathGateway(catalog.url, corsOrigins);
    await gateway.issueKeys(16, 10);
  }, within(30_000));
  afterAll(async () => {
    await gateway.close();
    await catalog.stop();
  });

  const key = (kind: Parameters<PathGateway['issued']>[0] = 'free') => gateway.issued(kind).apiKey;
  const overSocket = (headers: Headers, body: string, url = '/v1/mcp') =>
    gateway.overSocket({ method: 'POST', url, headers, body });
  const throughFastify = (headers: Headers, body: string, url = '/v1/mcp') =>
    gateway.throughFastify({ method: 'POST', url, headers, body });
  /** The answer over a socket once the endpoint has answered the exchange, and who answered. */
  const preparedThenPost = (headers: Headers, body: string) =>
    preparedThenAsk(gateway, { method: 'POST', url: '/v1/mcp', headers, body });

  const slug = dataset.tools[2]!.slug;
  const messages: [string, Era, string, Record<string, unknown>][] = [
    ['discovery', 'modern', 'server/discover', {}],
    ['tools/list', 'modern', 'tools/list', {}],
    ['resources/list', 'modern', 'resources/list', {}],
    [
      'initialize',
      'legacy',
      'initialize',
      {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'path-test', version: '1.0.0' },
      },
    ],
    ['tools/list', 'legacy', 'tools/list', {}],
    [
      'search_tools',
      'modern',
      'tools/call',
      {
        name: 'search_tools',
        arguments: { q: 'vector database', limit: 3 },
      },
    ],
    [
      'search_tools',
      'legacy',
      'tools/call',
      {
        name: 'search_tools',
        arguments: { q: 'agent', limit: 2 },
      },
    ],
    ['get_tool', 'modern', 'tools/call', { name: 'get_tool', arguments: { slug } }],
  ];

  test.each(messages)(
    '%s (%s): answered before Fastify, as Fastify answers it',
    async (_n, era, method, params) => {
      for (const tier of ['free', 'pro'] as const) {
        const { headers, body } = mcpRequest(era, 'same-id', method, params);
        const keyed = { ...headers, 'x-api-key': key(tier), 'x-request-id': 'same-id' };
        const { answer, byFastify } = await preparedThenPost(keyed, body);
        expect(byFastify).toBe(false);
        expect(answer.status).toBe(200);
        const fastify = await throughFastify(keyed, body);
        expect(comparable(answer)).toEqual(comparable(fastify));
        // A call takes one unit (the path's and Fastify's after it are consecutive), a list none.
        const charged = method === 'tools/call' ? 1 : 0;
        expect(Number(answer.headers['x-ratelimit-remaining'])).toBe(
          Number(fastify.headers['x-ratelimit-remaining']) + charged,
        );
      }
    },
  );

  test('the id of each request is its own: numbers, strings, long ones', async () => {
    const apiKey = key();
    const ids = [7, 'abc', 'x'.repeat(200), 0, -1.5];
    for (const id of ids) {
      const { headers, body } = mcpRequest('modern', id, 'tools/list');
      const keyed = { ...headers, 'x-api-key': apiKey };
      const { answer, byFastify } = await preparedThenPost(keyed, body);
      expect(byFastify).toBe(false);
      expect((JSON.parse(answer.body) as { id: unknown }).id).toEqual(id);
      expect(answer.body).toBe((await throughFastify(keyed, body)).body);
    }
  });

  test('a body is parsed as the route parses it: `__proto__` removed, the same answer', async () => {
    const { headers, body } = mcpRequest('modern', 8, 'tools/list');
    const keyed = { ...headers, 'x-api-key': key(), 'x-request-id': 'same-id' };
    const poisoned = body.replace('{', '{"__proto__":{"x":1},');
    await preparedThenPost(keyed, body);
    gateway.fastifyAnswered.length = 0;
    const answer = await overSocket(keyed, poisoned);
    expect(gateway.fastifyAnswered).toEqual([]);
    expect(comparable(answer)).toEqual(comparable(await throughFastify(keyed, poisoned)));
  });

  test('what the path does not answer reaches Fastify, with its body, before any unit', async () => {
    const free = key();
    const list = mcpRequest('modern', 1, 'tools/list');
    const call = mcpRequest('modern', 2, 'tools/call', {
      name: 'search_tools',
      arguments: { q: 'fall through', limit: 2 },
    });
    await preparedThenPost({ ...list.headers, 'x-api-key': free }, list.body);
    const keyed = { ...list.headers, 'x-api-key': free };
    const cases: [string, Headers, string, string?][] = [
      ['a notification', keyed, mcpRequest('modern', undefined, 'notifications/initialized').body],
      ['a batch', keyed, `[${list.body}]`],
      ['not JSON', keyed, '{"jsonrpc":'],
      ['not one message', keyed, '{"jsonrpc":"2.0","id":1}'],
      ['a charset', { ...keyed, 'content-type': 'application/json; charset=utf-8' }, list.body],
      ['an unknown key', { ...keyed, 'x-api-key': 'tdk_unknown' }, list.body],
      ['no key', list.headers, list.body],
      ['a key bound to addresses', { ...keyed, 'x-api-key': key('bound') }, list.body],
      ['a key without the scope', { ...keyed, 'x-api-key': key('scoped') }, list.body],
      ['a query', keyed, list.body, '/v1/mcp?x=1'],
      // Never answered before: the SDK's (a call whose catalog read the cache does not hold yet).
      ['an unprepared call', { ...call.headers, 'x-api-key': free }, call.body],
      [
        'a tool the tier may not call',
        { ...call.headers, 'x-api-key': free },
        mcpRequest('modern', 3, 'tools/call', {
          name: 'compare_tools',
          arguments: { slugs: [slug, slug] },
        }).body,
      ],
      [
        'bad arguments',
        { ...call.headers, 'x-api-key': free },
        mcpRequest('modern', 4, 'tools/call', { name: 'search_tools', arguments: { limit: 'ten' } })
          .body,
      ],
    ];
    if (corsOrigins !== '*') {
      cases.push(['an Origin', { ...keyed, origin: 'https://app.example' }, list.body]);
    }
    for (const [name, sent, body, url = '/v1/mcp'] of cases) {
      const headers = { ...sent, 'x-request-id': 'same-id' };
      gateway.fastifyAnswered.length = 0;
      const answer = await overSocket(headers, body, url);
      expect([name, gateway.fastifyAnswered]).toEqual([name, [`POST ${url}`]]);
      // The body Fastify read is the one sent: its answer is the one inject gets.
      expect([name, comparable(answer)]).toEqual([
        name,
        comparable(await throughFastify(headers, body, url)),
      ]);
    }
    // A draining gateway: Fastify answers, closing the connection.
    gateway.app.draining = true;
    gateway.fastifyAnswered.length = 0;
    const draining = await overSocket(keyed, list.body);
    gateway.app.draining = false;
    expect(gateway.fastifyAnswered).toEqual(['POST /v1/mcp']);
    expect(draining.headers.connection).toBe('close');
  });

  test('past the quota: the unit it took is Fastify’s to refuse, the same 429, one unit', async () => {
    const { apiKey, record } = gateway.issued();
    const { id } = record;
    const { headers, body } = mcpRequest('modern', 9, 'tools/call', {
      name: 'search_tools',
      arguments: { q: 'quota', limit: 2 },
    });
    const keyed = { ...headers, 'x-api-key': apiKey, 'x-request-id': 'same-id' };
    await preparedThenPost(keyed, body);
    const used = (await gateway.deps.quota.peek(id, 'free')).limit - 3;
    for (let i = 0; i < used; i++) await gateway.deps.quota.consume(id, 'free');
    gateway.fastifyAnswered.length = 0;
    const refused = await overSocket(keyed, body);
    expect(refused.status).toBe(429);
    expect(gateway.fastifyAnswered).toEqual(['POST /v1/mcp']);
    expect(JSON.parse(refused.body)).toMatchObject({ id: 9, error: { code: -32029 } });
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    expect((await gateway.deps.quota.peek(id, 'free')).remaining).toBe(0);
    expect(comparable(refused)).toEqual(comparable(await throughFastify(keyed, body)));
    // A list takes no unit: still answered by the path past the quota.
    const list = mcpRequest('modern', 10, 'tools/list');
    const { answer, byFastify } = await preparedThenPost(
      { ...list.headers, 'x-api-key': apiKey },
      list.body,
    );
    expect([answer.status, byFastify]).toEqual([200, false]);
  });

  test('each answer counted, logged and in the search analytics, as Fastify’s are', async () => {
    const apiKey = key();
    const { headers, body } = mcpRequest('modern', 5, 'tools/call', {
      name: 'search_tools',
      arguments: { q: 'prepared path query', limit: 2 },
    });
    await preparedThenPost({ ...headers, 'x-api-key': apiKey }, body);
    const counted = () =>
      Promise.all([
        gateway.series('http_requests_total', 'route="/v1/mcp"', 'status_code="200"'),
        gateway.series('gateway_response_cache_requests_total', '"hit"'),
        gateway.series('gateway_quota_decisions_total', 'tier="free"', '"allowed"'),
        gateway.series('gateway_mcp_tool_calls_total', 'tool="search_tools"', 'outcome="ok"'),
      ]);
    const before = await counted();
    gateway.logLines.length = 0;
    gateway.fastifyAnswered.length = 0;
    for (let i = 0; i < 3; i++) {
      await overSocket({ ...headers, 'x-api-key': apiKey, 'x-request-id': `mcp-${i}` }, body);
    }
    expect(gateway.fastifyAnswered).toEqual([]);
    expect(await counted()).toEqual(before.map((value) => value + 3));
    const lines = gateway.logLines.filter((line) => line.msg === 'request completed');
    expect(lines.map((l) => [l.reqId, l.method, l.route, l.status, l.tier])).toEqual(
      [0, 1, 2].map((i) => [`mcp-${i}`, 'POST', '/v1/mcp', 200, 'free']),
    );
    const searches = await gateway.app.inject({
      method: 'GET',
      url: '/v1/usage/searches',
      headers: { 'x-api-key': apiKey },
    });
    // Six searches: the two that prepared the answer through Fastify, four by the path.
    const report = searches.json() as { data: { totals: { searches: number } } };
    expect(report.data.totals.searches).toBe(6);
    expect(JSON.stringify(report)).toMatch(/"prepared path query"/);
  });
});
