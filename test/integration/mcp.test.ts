import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import { FREE_FIELDS } from '../support/catalog';
import { startOtlpReceiver } from '../support/otlp-receiver';
import { waitFor } from '../support/ports';
import { RedisServer } from '../support/redis-server';
import { keyedGet, keysCli, startStack, tempDataDir } from '../support/services';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Stack = Awaited<ReturnType<typeof startStack>>;
type Tier = 'free' | 'pro' | 'enterprise';

const QUOTA_FREE = 12;
const TOOLS = [
  'search_tools',
  'get_tool',
  'get_tool_history',
  'list_categories',
  'list_tools',
  'compare_tools',
];
const ACCEPT = 'application/json, text/event-stream';
/** Fields a paid record has and a Free one lacks (docs/api.md#response-bodies). */
const PAID_FIELDS = ['longDescription', 'keyFeatures', 'pricingTiers', 'reviews', 'editorsChoice'];

/**
 * The MCP endpoint through the running system, with the SDK's own client over its Streamable HTTP
 * transport, on the embedded stack and on Redis: each tool for each tier, the same records as
 * REST, one unit per `tools/call` and none for `initialize` or `tools/list`, the quota's 429 as a
 * JSON-RPC error, keys refused as on every route, bad arguments and bad bodies never a 5xx, the
 * metrics and the span of each request.
 */
describe.each([
  ['the embedded stack', false],
  ['Redis', true],
])('MCP on %s', (_name, withRedis) => {
  let redis: RedisServer | undefined;
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let stack: Stack;
  const dataDir = tempDataDir();
  const env: Record<string, string> = { DATA_DIR: dataDir };
  const keys = {} as Record<Tier, string>;
  let endpoint: URL;

  let emails = 0;
  async function newKey(tier: Tier): Promise<string> {
    emails += 1;
    const created = (await keysCli(
      ['create', '--tier', tier, '--email', `mcp${emails}@example.com`, '--name', 'MCP'],
      env,
    )) as { apiKey: string };
    return created.apiKey;
  }

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    redis = withRedis ? await RedisServer.start() : undefined;
    const tracing = {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    stack = await startStack(
      {
        ...env,
        ...tracing,
        QUOTA_FREE: String(QUOTA_FREE),
        ...(redis ? { REDIS_URL: redis.url } : {}),
      },
      tracing,
    );
    endpoint = new URL(`${stack.gateway.url}/v1/mcp`);
    for (const tier of ['free', 'pro', 'enterprise'] as const) keys[tier] = await newKey(tier);
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
    await redis?.stop();
    await receiver?.close();
  });

  /** The SDK's client, connected (`initialize` and its notification) with this key. */
  async function connect(key: string) {
    const answers: Response[] = [];
    const transport = new StreamableHTTPClientTransport(endpoint, {
      requestInit: { headers: { 'x-api-key': key } },
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        answers.push(response);
        return response;
      },
    });
    const client = new Client({ name: 'mcp-test', version: '1.0.0' });
    await client.connect(transport);
    return { client, answers, last: () => answers[answers.length - 1]! };
  }

  /** One JSON-RPC message posted as is: the status, headers and JSON body (null if none). */
  async function post(key: string | undefined, body: string, headers: Record<string, string> = {}) {
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: {
        accept: ACCEPT,
        'content-type': 'application/json',
        ...(key === undefined ? {} : { 'x-api-key': key }),
        ...headers,
      },
      body,
    });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      body: (text ? JSON.parse(text) : null) as Json,
    };
  }

  const call = (id: number, name: string, args?: unknown) =>
    JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

  const used = async (key: string) =>
    (await keyedGet(stack.gateway.url, key, '/v1/usage')).body.data.used as number;

  /** `gateway_mcp_tool_calls_total` by `tool outcome`. */
  async function toolCalls(): Promise<Record<string, number>> {
    const metrics = await stack.gateway.metrics();
    const series = metrics.matchAll(
      /^gateway_mcp_tool_calls_total\{tool="(\w+)",outcome="(\w+)"[^}]*\} (\d+)$/gm,
    );
    return Object.fromEntries(
      [...series].map(([, tool, outcome, n]) => [`${tool} ${outcome}`, Number(n)]),
    );
  }

  const structured = (result: unknown) => (result as CallToolResult).structuredContent as Json;

  test('initialize and tools/list take no unit; tools/list names the five tools, their arguments and output schemas', async () => {
    const key = await newKey('free');
    const { client, last } = await connect(key);
    expect(client.getServerVersion()).toMatchObject({ name: 'tool-directory' });
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOLS);
    expect(last().status).toBe(200);
    expect(last().headers.get('x-ratelimit-remaining')).toBe(String(QUOTA_FREE));
    expect(last().headers.get('x-ratelimit-limit')).toBe(String(QUOTA_FREE));
    const inputs = Object.fromEntries(tools.map((t) => [t.name, t.inputSchema]));
    expect(inputs.search_tools).toMatchObject({
      properties: { q: { type: 'string', minLength: 2 }, limit: { maximum: 50 }, category: {} },
      required: ['q'],
    });
    expect(Object.keys(inputs.list_tools!.properties!).sort()).toEqual([
      'category',
      'limit',
      'page',
      'sort',
    ]);
    expect(inputs.list_tools!.required ?? []).toEqual([]);
    expect(inputs.get_tool!.required).toEqual(['slug']);
    expect(inputs.compare_tools!.required).toEqual(['tool1', 'tool2']);
    for (const tool of tools) expect(tool.annotations?.readOnlyHint).toBe(true);
    for (const tool of tools) {
      expect([tool.name, tool.outputSchema]).toEqual([
        tool.name,
        expect.objectContaining({ type: 'object', required: ['data', 'meta'] }),
      ]);
    }
    expect(await used(key)).toBe(0);
    await client.close();
  });

  test.each(['free', 'pro', 'enterprise'] as const)(
    'every tool for a %s key gives what REST gives that tier, one unit per call',
    async (tier) => {
      const key = tier === 'free' ? await newKey('free') : keys[tier];
      const { client, last } = await connect(key);
      const before = await used(key);
      const rest = async (url: string) => (await keyedGet(stack.gateway.url, key, url)).body;
      // Each answer's structured content against the output schema tools/list gives, as a
      // client checks it (the SDK's client does so itself once it has listed the tools).
      const validator = new AjvJsonSchemaValidator();
      const outputs = Object.fromEntries(
        (await client.listTools()).tools.map((t) => [
          t.name,
          validator.getValidator(t.outputSchema!),
        ]),
      );
      const valid = (name: string, result: unknown) =>
        outputs[name]!(structured(result)).errorMessage;

      const search = await client.callTool({
        name: 'search_tools',
        arguments: { q: 'vector database', limit: 3 },
      });
      expect(search.isError).toBeFalsy();
      expect(Number(last().headers.get('x-ratelimit-remaining'))).toBeGreaterThanOrEqual(0);
      const found = structured(search);
      expect(found).toEqual(await rest('/v1/search?q=vector%20database&limit=3'));
      expect(valid('search_tools', search)).toBeUndefined();
      expect(found.data).toHaveLength(3);
      expect((search.content as { text: string }[])[0]!.text).toContain(found.data[0].slug);

      const tool = await client.callTool({ name: 'get_tool', arguments: { slug: 'langchain' } });
      expect(structured(tool)).toEqual(await rest('/v1/tools/langchain'));
      expect(valid('get_tool', tool)).toBeUndefined();
      const fields = Object.keys(structured(tool).data);
      if (tier === 'free') {
        expect(fields.sort()).toEqual([...FREE_FIELDS].sort());
      } else {
        expect(fields).toEqual(expect.arrayContaining(PAID_FIELDS));
      }
      for (const hit of found.data) {
        for (const field of PAID_FIELDS) expect(field in hit).toBe(tier !== 'free');
      }

      const categories = await client.callTool({ name: 'list_categories', arguments: {} });
      expect(structured(categories)).toEqual(await rest('/v1/categories'));
      expect(valid('list_categories', categories)).toBeUndefined();

      const page = await client.callTool({
        name: 'list_tools',
        arguments: { category: 'llm-frameworks', page: 2, limit: 2, sort: '-rating' },
      });
      expect(structured(page)).toEqual(
        await rest('/v1/tools?category=llm-frameworks&page=2&limit=2&sort=-rating'),
      );
      expect((page.content as { text: string }[])[0]!.text).toMatch(/^Page 2 of \d+/);
      expect(valid('list_tools', page)).toBeUndefined();

      const compared = await client.callTool({
        name: 'compare_tools',
        arguments: { tool1: 'langchain', tool2: 'llamaindex' },
      });
      if (tier === 'free') {
        expect(compared.isError).toBe(true);
        expect((compared.content as { text: string }[])[0]!.text).toBe(
          'compare_tools needs a Pro or Enterprise key; this is a Free key',
        );
      } else {
        expect(compared.isError).toBeFalsy();
        expect(structured(compared)).toEqual(await rest('/v1/compare/langchain/llamaindex'));
        expect(valid('compare_tools', compared)).toBeUndefined();
      }
      // Five calls; the REST reads above took theirs too (no compare for Free), /v1/usage none.
      expect(await used(key)).toBe(before + 5 + (tier === 'free' ? 4 : 5));
      await client.close();
    },
  );

  test('bad arguments, unknown tools and slugs are tool errors or JSON-RPC errors, never a 5xx; each call takes its unit', async () => {
    const key = keys.pro;
    const { client, answers } = await connect(key);
    const before = await used(key);
    const failures: [string, Record<string, unknown>, RegExp][] = [
      ['search_tools', { q: 'a' }, /q/],
      ['search_tools', { q: 'rag', limit: 51 }, /limit/],
      ['search_tools', { q: 'rag', limit: '5' }, /limit/],
      ['search_tools', { q: 'rag', page: 1 }, /page/],
      ['list_tools', { sort: 'price' }, /sort/],
      ['list_tools', { page: 0 }, /page/],
      ['get_tool', {}, /slug/],
      ['get_tool', { slug: 'no-such-tool' }, /^Tool 'no-such-tool' not found$/],
      ['compare_tools', { tool1: 'langchain', tool2: 'langchain' }, /itself/],
      ['compare_tools', { tool1: 'langchain', tool2: 'nope-nope' }, /nope-nope/],
    ];
    for (const [name, args, message] of failures) {
      const result = await client.callTool({ name, arguments: args });
      expect([name, result.isError]).toEqual([name, true]);
      expect((result.content as { text: string }[])[0]!.text).toMatch(message);
    }
    // A tool the server does not have: JSON-RPC invalid params naming it, its unit taken too.
    const unknown = await client
      .callTool({ name: 'no_such_tool', arguments: {} })
      .catch((e: unknown) => e as { code: number; message: string });
    expect(unknown).toMatchObject({ code: -32602, message: expect.stringMatching(/no_such_tool/) });
    expect(answers.every((a) => a.status < 500)).toBe(true);
    expect(await used(key)).toBe(before + failures.length + 1);
    // A tools/call without a tool name, or with arguments not an object: JSON-RPC invalid params.
    for (const params of [{}, { name: 'get_tool', arguments: ['langchain'] }]) {
      const malformed = await post(
        key,
        JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params }),
      );
      expect([malformed.status, malformed.body.id, malformed.body.error.code]).toEqual([
        200, 9, -32602,
      ]);
    }
    const unknownMethod = await post(
      key,
      JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'nope/nope' }),
    );
    expect([unknownMethod.status, unknownMethod.body.error.code]).toEqual([200, -32601]);
    await client.close();
  });

  test('past the quota a tools/call is a 429 JSON-RPC error with the headers of REST; initialize and tools/list still answer', async () => {
    const key = await newKey('free');
    const { client, last } = await connect(key);
    for (let i = 0; i < QUOTA_FREE; i++) {
      await client.callTool({ name: 'list_categories', arguments: {} });
      expect(last().headers.get('x-ratelimit-remaining')).toBe(String(QUOTA_FREE - 1 - i));
    }
    const refused = await client
      .callTool({ name: 'list_categories', arguments: {} })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StreamableHTTPError);
    expect((refused as StreamableHTTPError).code).toBe(429);

    const sentAt = Date.now();
    const raw = await post(key, call(42, 'search_tools', { q: 'agents' }));
    const answeredAt = Date.now();
    expect(raw.status).toBe(429);
    const reset = Number(raw.headers.get('x-ratelimit-reset'));
    expect(reset % 86_400).toBe(0);
    expect(raw.headers.get('x-ratelimit-limit')).toBe(String(QUOTA_FREE));
    expect(raw.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(raw.headers.get('ratelimit-policy')).toBe(`"daily";q=${QUOTA_FREE};w=86400`);
    const retryAfter = Number(raw.headers.get('retry-after'));
    // The seconds to the reset from the server's now, somewhere between sending and answer, in
    // whole seconds, however long the request took.
    expect(retryAfter).toBeGreaterThanOrEqual(Math.floor(reset - answeredAt / 1000) - 1);
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil(reset - sentAt / 1000) + 1);
    expect(raw.body).toEqual({
      jsonrpc: '2.0',
      id: 42,
      error: {
        code: -32029,
        message: `Daily quota of the Free tier (${QUOTA_FREE} requests) exceeded; it resets at ${new Date(reset * 1000).toISOString()}`,
        data: { retryAfter },
      },
    });
    const overQuota = (await toolCalls())['search_tools over_quota'];
    expect(overQuota).toBeGreaterThanOrEqual(1);
    // Nothing was counted past the quota, and the free methods still work.
    expect(await used(key)).toBe(QUOTA_FREE);
    const again = await connect(key);
    expect((await again.client.listTools()).tools).toHaveLength(TOOLS.length);
    expect(again.last().status).toBe(200);
    await Promise.all([client.close(), again.client.close()]);
  });

  test('no key, an invalid or a revoked one: 401 with the error body of every route', async () => {
    const missing = await post(undefined, call(1, 'list_categories'));
    expect(missing.status).toBe(401);
    expect(missing.body.error).toMatch(/x-api-key header is missing; register for a free key at/);
    // OAuth first, for agent hosts that sign in; the API key beside it.
    expect(missing.headers.get('www-authenticate')).toMatch(
      /^Bearer resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/v1\/mcp", ApiKey /,
    );
    const invalid = await post(`tdk_${'A'.repeat(38)}`, call(1, 'list_categories'));
    expect([invalid.status, invalid.body]).toEqual([401, { error: 'The API key is invalid' }]);

    const revoked = await newKey('pro');
    const { client } = await connect(revoked);
    await keysCli(['revoke', revoked], env);
    await waitFor(
      async () =>
        (await post(revoked, call(1, 'list_categories'))).status === 401 ? true : undefined,
      {
        what: 'the revocation',
      },
    );
    const refused = await client.listTools().catch((e: unknown) => e);
    expect((refused as StreamableHTTPError).code).toBe(401);
    const client2 = new Client({ name: 'mcp-test', version: '1.0.0' });
    const noKey = await client2
      .connect(new StreamableHTTPClientTransport(endpoint))
      .catch((e: unknown) => e);
    expect((noKey as StreamableHTTPError).code).toBe(401);
  });

  test('a batch, a body over the limit, not JSON or of another type: the API error body, never a 5xx; GET and DELETE: 405', async () => {
    const key = keys.enterprise;
    const before = await used(key);
    const batch = await post(key, `[${call(1, 'list_categories')},${call(2, 'list_categories')}]`);
    expect([batch.status, batch.body.error]).toEqual([400, expect.stringMatching(/batch/)]);
    const big = await post(key, call(1, 'search_tools', { q: 'x'.repeat(17 * 1024) }));
    expect([big.status, big.body]).toEqual([
      413,
      { error: 'Request body is larger than 16384 bytes' },
    ]);
    const broken = await post(key, '{"jsonrpc":"2.0",');
    expect([broken.status, broken.body.error]).toEqual([
      400,
      expect.stringMatching(/not valid JSON/),
    ]);
    const notRpc = await post(key, JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'tools/list' }));
    expect(notRpc.status).toBe(400);
    const text = await post(key, call(1, 'list_categories'), { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    const unacceptable = await post(key, call(1, 'list_categories'), {
      accept: 'application/json',
    });
    expect([unacceptable.status, unacceptable.body.error.code]).toEqual([406, -32000]);
    // None of them reached a tool: no unit taken but the 406's tools/call, taken on arrival.
    expect(await used(key)).toBe(before + 1);
    const notification = await post(
      key,
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    );
    expect([notification.status, notification.body]).toEqual([202, null]);

    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(endpoint, {
        method,
        headers: { 'x-api-key': key, accept: ACCEPT },
      });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      expect(response.headers.get('x-ratelimit-limit')).toBe('50000');
      expect(await response.json()).toEqual({
        jsonrpc: '2.0',
        error: { code: -32000, message: 'Method not allowed.' },
        id: null,
      });
      expect((await fetch(endpoint, { method })).status).toBe(401);
    }
  });

  test('metrics: the HTTP route once, tool calls by tool and outcome; one span per request with the tool', async () => {
    const { client, last } = await connect(keys.pro);
    // A slug no test asked for: a catalog call, not the gateway's cache.
    const response = await client.callTool({ name: 'get_tool', arguments: { slug: 'ollama' } });
    expect(response.isError).toBeFalsy();
    const requestId = last().headers.get('x-request-id');
    const before = await toolCalls();
    await client.callTool({ name: 'get_tool', arguments: { slug: 'no-such-tool' } });
    await client.callTool({ name: 'search_tools', arguments: { q: 'a' } });
    await client.callTool({ name: 'no_such_tool', arguments: {} }).catch(() => undefined);
    const after = await toolCalls();
    expect(after['get_tool ok']! - before['get_tool ok']!).toBe(0);
    for (const series of ['get_tool error', 'search_tools invalid', 'unknown invalid']) {
      expect([series, (after[series] ?? 0) - (before[series] ?? 0)]).toEqual([series, 1]);
    }
    const metrics = await stack.gateway.metrics();
    const routes = new Set(
      [...metrics.matchAll(/^http_request[^{]*\{[^}]*route="([^"]*mcp[^"]*)"/gm)].map((m) => m[1]),
    );
    expect([...routes]).toEqual(['/v1/mcp']);
    // The tool's catalog calls are timed under the REST route it mirrors.
    expect(metrics).toMatch(
      /gateway_upstream_duration_seconds_count\{[^}]*route="\/v1\/tools\/:slug",status_code="200"\}/,
    );

    const called = () =>
      receiver.spans.filter(
        (s) =>
          s.service === 'tool-directory-gateway' &&
          s.attributes['tool_directory.request_id'] === requestId,
      );
    await waitFor(async () => (called().length > 0 ? true : undefined), {
      what: 'the span of a get_tool call',
    });
    const span = called()[0]!;
    expect(span.name).toBe('POST /v1/mcp');
    expect(span.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'get_tool',
      'http.route': '/v1/mcp',
    });
    const catalogSpans = () => receiver.spans.filter((s) => s.parentSpanId === span.spanId);
    await waitFor(async () => (catalogSpans().length > 0 ? true : undefined), {
      what: 'the catalog span of the call',
    });
    expect(catalogSpans().map((s) => s.name)).toEqual(['GET /v1/tools/:slug']);
    await client.close();
  });
});
