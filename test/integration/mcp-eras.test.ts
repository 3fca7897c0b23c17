import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import { FREE_FIELDS } from '../support/catalog';
import { RedisServer } from '../support/redis-server';
import { keyedGet, keysCli, startStack, tempDataDir } from '../support/services';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Tier = 'free' | 'pro' | 'enterprise';
type Negotiation = 'legacy' | 'auto' | { pin: string };

/** Enough for every tool, resource and REST read of a Free key's test. */
const QUOTA_FREE = 20;
const TOOLS = [
  'search_tools',
  'get_tool',
  'get_tool_history',
  'list_categories',
  'list_tools',
  'compare_tools',
];
const HOUR_MS = 3_600_000;

/** The official SDK's client of each kind a host runs, and the revision each must end on. */
const CLIENTS: [string, Negotiation, string][] = [
  ['pinned to 2025-11-25', 'legacy', '2025-11-25'],
  ['pinned to 2026-07-28', { pin: '2026-07-28' }, '2026-07-28'],
  ['negotiating automatically', 'auto', '2026-07-28'],
];

/** One HTTP exchange of a client, as the endpoint answered it. */
interface Exchange {
  method: string;
  status: number;
  headers: Headers;
  body: Json | null;
}

/**
 * The MCP endpoint's two protocol eras on one URL, with the official SDK's client (v2) pinned to
 * 2025-11-25, pinned to 2026-07-28 and negotiating (which must end on 2026-07-28), on the
 * embedded stack and on Redis: every tool and every resource on every tier gives what REST gives
 * that tier and takes its unit, discovery and the lists take none and carry their cache hints on
 * 2026-07-28, bad arguments are tool errors naming them, and past the quota a call or a read is
 * the 429 of REST with a JSON-RPC error, in both eras.
 */
describe.each([
  ['the embedded stack', false],
  ['Redis', true],
])('MCP eras on %s', (_name, withRedis) => {
  let redis: RedisServer | undefined;
  let stack: Awaited<ReturnType<typeof startStack>>;
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };
  const keys = {} as Record<Tier, string>;
  let emails = 0;

  async function newKey(tier: Tier): Promise<string> {
    emails += 1;
    const created = (await keysCli(
      ['create', '--tier', tier, '--email', `eras${emails}@example.com`, '--name', 'Eras'],
      env,
    )) as { apiKey: string };
    return created.apiKey;
  }

  beforeAll(async () => {
    redis = withRedis ? await RedisServer.start() : undefined;
    stack = await startStack({
      ...env,
      QUOTA_FREE: String(QUOTA_FREE),
      ...(redis ? { REDIS_URL: redis.url } : {}),
    });
    for (const tier of ['free', 'pro', 'enterprise'] as const) keys[tier] = await newKey(tier);
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
    await redis?.stop();
  });

  const used = async (key: string) =>
    (await keyedGet(stack.gateway.url, key, '/v1/usage')).body.data.used as number;
  const rest = async (key: string, url: string) =>
    (await keyedGet(stack.gateway.url, key, url)).body;
  const structured = (result: unknown) => (result as CallToolResult).structuredContent as Json;
  const text = (result: unknown) => (result as CallToolResult).content[0] as { text: string };

  /** One message posted as a client of `revision` sends it: the status and the body's text. */
  async function post(key: string, revision: string, id: number, method: string, params: Json) {
    const modern = revision === '2026-07-28';
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': revision,
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const response = await fetch(`${stack.gateway.url}/v1/mcp`, {
      method: 'POST',
      headers: {
        'x-api-key': key,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': revision,
        ...(modern && { 'mcp-method': method }),
        ...(modern && method === 'tools/call' && { 'mcp-name': String(params.name) }),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method,
        params: modern ? { ...params, _meta: envelope } : params,
      }),
    });
    return { status: response.status, text: await response.text() };
  }

  test.each(['2025-11-25', '2026-07-28'])(
    'asked again, %s: the lists, discovery and a cached tool result are what the SDK wrote but for the id, each tier its own',
    async (revision) => {
      const asks: [string, Json][] = [
        ['tools/list', {}],
        ['resources/list', {}],
        ['resources/templates/list', {}],
        ['tools/call', { name: 'search_tools', arguments: { q: 'observability', limit: 4 } }],
        ['tools/call', { name: 'get_tool', arguments: { slug: 'langfuse' } }],
      ];
      if (revision === '2026-07-28') asks.push(['server/discover', {}]);
      for (const tier of ['free', 'pro'] as const) {
        for (const [method, params] of asks) {
          // The first answers come from the SDK (and fill the response cache); the later ones
          // may come from what was kept. All are one answer, but for the id.
          const answers = [];
          for (const id of [1, 2, 3, 40, 5]) {
            const { status, text } = await post(keys[tier], revision, id, method, params);
            expect([method, status]).toEqual([method, 200]);
            const body = JSON.parse(text) as Json;
            expect([method, body.id]).toEqual([method, id]);
            answers.push(JSON.stringify({ ...body, id: 0 }));
          }
          expect([method, new Set(answers).size]).toEqual([method, 1]);
          if (method === 'tools/call') {
            const result = JSON.parse(answers[0]!).result as Json;
            const record = result.structuredContent.data as Json[] | Json as Json;
            const first = Array.isArray(record) ? record[0] : record;
            if (tier === 'free') expect(first).not.toHaveProperty('longDescription');
            else expect(first).toHaveProperty('longDescription');
          }
        }
      }
    },
  );

  describe.each(CLIENTS)('the client %s', (_kind, negotiation, revision) => {
    /** The SDK's client, connected with this key; every exchange it makes kept, body read. */
    async function connect(key: string) {
      const exchanges: Exchange[] = [];
      const transport = new StreamableHTTPClientTransport(new URL(`${stack.gateway.url}/v1/mcp`), {
        requestInit: { headers: { 'x-api-key': key } },
        fetch: async (url, init) => {
          const response = await fetch(url, init);
          const sent = typeof init?.body === 'string' ? (JSON.parse(init.body) as Json) : {};
          const body = await response.clone().text();
          exchanges.push({
            method: String(sent.method ?? init?.method),
            status: response.status,
            headers: response.headers,
            body: body.startsWith('{') ? (JSON.parse(body) as Json) : null,
          });
          return response;
        },
      });
      const client = new Client(
        { name: 'eras-test', version: '1.0.0' },
        { versionNegotiation: { mode: negotiation } },
      );
      await client.connect(transport);
      const last = (method: string) => exchanges.filter((e) => e.method === method).at(-1)!;
      return { client, exchanges, last };
    }

    test('it ends on its revision; discovery and the lists take no unit and carry cache hints on 2026-07-28; every tool is annotated and has an output schema', async () => {
      const key = await newKey('free');
      const { client, exchanges, last } = await connect(key);
      expect(client.getNegotiatedProtocolVersion()).toBe(revision);
      expect(client.getServerVersion()).toMatchObject({ name: 'tool-directory' });
      const { tools } = await client.listTools();
      const { resources } = await client.listResources();
      const { resourceTemplates } = await client.listResourceTemplates();
      expect(tools.map((t) => t.name)).toEqual(TOOLS);
      for (const tool of tools) {
        expect([tool.name, tool.annotations]).toEqual([
          tool.name,
          expect.objectContaining({
            title: tool.title,
            readOnlyHint: true,
            idempotentHint: true,
            openWorldHint: false,
          }),
        ]);
        expect([tool.name, tool.outputSchema]).toEqual([
          tool.name,
          expect.objectContaining({ type: 'object', required: ['data', 'meta'] }),
        ]);
      }
      expect(resources.map((r) => r.uri)).toEqual(['tooldirectory://categories']);
      expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(['tooldirectory://tools/{slug}']);
      for (const exchange of exchanges) {
        // A 2025 client asks for a stream of server messages (GET): a stateless server has none
        // to give, 405; a notification is accepted without an answer, 202.
        const expected =
          exchange.method === 'GET'
            ? 405
            : exchange.method.startsWith('notifications/')
              ? 202
              : 200;
        expect([exchange.method, exchange.status]).toEqual([exchange.method, expected]);
      }
      const listed = last('tools/list');
      expect(listed.headers.get('x-ratelimit-remaining')).toBe(String(QUOTA_FREE));
      const cacheable = ['tools/list', 'resources/list', 'resources/templates/list'];
      if (revision === '2026-07-28') {
        cacheable.push('server/discover');
        const discovered = last('server/discover').body!.result as Json;
        expect(discovered.supportedVersions).toContain('2026-07-28');
        expect(discovered._meta['io.modelcontextprotocol/serverInfo']).toMatchObject({
          name: 'tool-directory',
        });
        // Nothing changes while a release runs: no list-changed notifications are offered.
        expect(discovered.capabilities).toEqual({
          tools: { listChanged: false },
          resources: { listChanged: false },
        });
        for (const method of cacheable) {
          const result = last(method).body!.result as Json;
          expect([method, result.ttlMs, result.cacheScope]).toEqual([method, HOUR_MS, 'public']);
        }
      } else {
        // 2025-11-25 has no cache hints: nothing of them on the wire.
        for (const method of cacheable)
          expect(last(method).body!.result).not.toHaveProperty('ttlMs');
      }
      expect(await used(key)).toBe(0);
      await client.close();
    });

    test.each(['free', 'pro', 'enterprise'] as const)(
      'every tool and resource for a %s key gives what REST gives that tier, one unit each',
      async (tier) => {
        const key = tier === 'free' ? await newKey('free') : keys[tier];
        const { client } = await connect(key);
        const before = await used(key);
        const validator = new AjvJsonSchemaValidator();
        const outputs = Object.fromEntries(
          (await client.listTools()).tools.map((t) => [
            t.name,
            validator.getValidator(t.outputSchema!),
          ]),
        );
        const calls: [string, Json, string][] = [
          [
            'search_tools',
            { q: 'vector database', limit: 3 },
            '/v1/search?q=vector%20database&limit=3',
          ],
          ['get_tool', { slug: 'langchain' }, '/v1/tools/langchain'],
          ['get_tool_history', { slug: 'langchain' }, '/v1/tools/langchain/history'],
          ['list_categories', {}, '/v1/categories'],
          ['list_tools', { page: 2, limit: 5, sort: 'name' }, '/v1/tools?page=2&limit=5&sort=name'],
          [
            'compare_tools',
            { tool1: 'langchain', tool2: 'llamaindex' },
            '/v1/compare/langchain/llamaindex',
          ],
        ];
        let restReads = 0;
        for (const [name, args, url] of calls) {
          const result = await client.callTool({ name, arguments: args });
          if (name === 'compare_tools' && tier === 'free') {
            expect(result.isError).toBe(true);
            expect(text(result).text).toBe(
              'compare_tools needs a Pro or Enterprise key; this is a Free key',
            );
            continue;
          }
          expect([name, result.isError ?? false]).toEqual([name, false]);
          expect([name, structured(result)]).toEqual([name, await rest(key, url)]);
          restReads += 1;
          expect([name, outputs[name]!(structured(result)).errorMessage]).toEqual([
            name,
            undefined,
          ]);
        }
        const got = await client.callTool({ name: 'get_tool', arguments: { slug: 'langchain' } });
        const fields = Object.keys(structured(got).data as Json).sort();
        if (tier === 'free') expect(fields).toEqual([...FREE_FIELDS].sort());
        else expect(fields).toEqual(expect.arrayContaining(['longDescription', 'pricingTiers']));

        const categories = await client.readResource({ uri: 'tooldirectory://categories' });
        expect(categories.contents).toEqual([
          {
            uri: 'tooldirectory://categories',
            mimeType: 'application/json',
            text: expect.any(String),
          },
        ]);
        const read = (result: typeof categories) =>
          JSON.parse((result.contents[0] as { text: string }).text) as Json;
        expect(read(categories)).toEqual(await rest(key, '/v1/categories'));
        const tool = await client.readResource({ uri: 'tooldirectory://tools/langchain' });
        expect(tool.contents[0]!.uri).toBe('tooldirectory://tools/langchain');
        expect(read(tool)).toEqual(await rest(key, '/v1/tools/langchain'));
        const missing = await client
          .readResource({ uri: 'tooldirectory://tools/no-such-tool' })
          .catch((e: unknown) => e as { code: number; message: string });
        expect(missing).toMatchObject({
          code: -32602,
          message: expect.stringMatching(/no-such-tool/),
        });
        // Six calls and a seventh get_tool, three reads; the REST reads took theirs too.
        expect(await used(key)).toBe(before + 7 + 3 + restReads + 2);
        await client.close();
      },
    );

    test('bad arguments are tool errors naming the argument; an unknown tool a JSON-RPC error; each takes its unit', async () => {
      const key = keys.pro;
      const { client, exchanges } = await connect(key);
      const before = await used(key);
      const failures: [string, Json, RegExp][] = [
        ['search_tools', { q: 'a' }, /'q': must be a string of 2 to/],
        ['search_tools', { q: 'rag', limit: 51 }, /'limit': must be an integer from 1 to 50/],
        ['search_tools', { q: 'rag', limit: '5' }, /'limit'/],
        ['search_tools', { q: 'rag', page: 1 }, /Unknown argument 'page'/],
        ['list_tools', { sort: 'price' }, /'sort': must be one of/],
        ['get_tool', {}, /Missing required argument 'slug'/],
        ['get_tool', { slug: 'no-such-tool' }, /^Tool 'no-such-tool' not found$/],
        ['get_tool_history', { slug: 'no-such-tool' }, /^Tool 'no-such-tool' not found$/],
        ['compare_tools', { tool1: 'langchain', tool2: 'langchain' }, /itself/],
      ];
      for (const [name, args, message] of failures) {
        const result = await client.callTool({ name, arguments: args });
        expect([name, args, result.isError]).toEqual([name, args, true]);
        expect([name, args, text(result).text]).toEqual([
          name,
          args,
          expect.stringMatching(message),
        ]);
      }
      const unknown = await client
        .callTool({ name: 'no_such_tool', arguments: {} })
        .catch((e: unknown) => e as { code: number; message: string });
      expect(unknown).toMatchObject({
        code: -32602,
        message: expect.stringMatching(/no_such_tool/),
      });
      expect(exchanges.every((e) => e.status < 500)).toBe(true);
      expect(await used(key)).toBe(before + failures.length + 1);
      await client.close();
    });

    test('past the quota a tools/call and a resources/read are the 429 of REST with a JSON-RPC error; the lists still answer', async () => {
      const key = await newKey('free');
      const { client, last } = await connect(key);
      for (let i = 0; i < QUOTA_FREE; i++) {
        await client.callTool({ name: 'list_categories', arguments: {} });
      }
      for (const [method, attempt] of [
        ['tools/call', () => client.callTool({ name: 'list_categories', arguments: {} })],
        ['resources/read', () => client.readResource({ uri: 'tooldirectory://categories' })],
      ] as const) {
        await expect(attempt()).rejects.toBeDefined();
        const refused = last(method);
        expect([method, refused.status]).toEqual([method, 429]);
        expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
        expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(refused.body).toMatchObject({
          jsonrpc: '2.0',
          error: {
            code: -32029,
            message: expect.stringMatching(
              new RegExp(
                `^Daily quota of the Free tier \\(${QUOTA_FREE} requests\\) exceeded; it resets at `,
              ),
            ),
          },
        });
      }
      expect(await used(key)).toBe(QUOTA_FREE);
      expect((await client.listTools()).tools).toHaveLength(TOOLS.length);
      expect(last('tools/list').status).toBe(200);
      await client.close();
    });
  });
});
