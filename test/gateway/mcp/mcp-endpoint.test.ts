import * as mcpServer from '../../../services/gateway/src/mcp/mcp-server';
import { inProcessGateway, registerInProcess } from '../../support/gateway';
import { tempDataDir } from '../../support/services';

type Gateway = Awaited<ReturnType<typeof inProcessGateway>>;
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const MODERN = '2026-07-28';

/**
 * The endpoint's SDK servers: lent one request at a time and given back, so a process builds as
 * many as it serves at once, not one per request, in either era. (That a server lent to one key
 * answers the next key as that key is in test/integration/mcp-eras.test.ts: each tier its own.)
 */
describe('MCP endpoint: servers built once, lent per request', () => {
  let gateway: Gateway;
  let key: string;

  beforeAll(async () => {
    gateway = await inProcessGateway({
      CATALOG_URL: 'http://127.0.0.1:9',
      DATA_DIR: tempDataDir(),
    });
    key = await registerInProcess(gateway.app, 'endpoint@example.com');
  });
  afterAll(() => gateway.close());

  /** A message of `era`, from a client named `client`: each name is an exchange of its own. */
  async function post(era: 'legacy' | 'modern', method: string, client: string, apiKey = key) {
    const modern = era === 'modern';
    const response = await gateway.app.inject({
      method: 'POST',
      url: '/v1/mcp',
      headers: {
        'x-api-key': apiKey,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(modern && { 'mcp-protocol-version': MODERN, 'mcp-method': method }),
      },
      payload: {
        jsonrpc: '2.0',
        id: 1,
        method,
        params: modern
          ? {
              _meta: {
                'io.modelcontextprotocol/protocolVersion': MODERN,
                'io.modelcontextprotocol/clientInfo': { name: client, version: '1.0.0' },
                'io.modelcontextprotocol/clientCapabilities': {},
              },
            }
          : {},
      },
    });
    return {
      status: response.statusCode,
      type: response.headers['content-type'],
      text: response.body,
      body: response.json<Json>(),
    };
  }

  test('a hundred requests of distinct exchanges, in both eras, build one server per era', async () => {
    const built = jest.spyOn(mcpServer, 'buildMcpServer');
    try {
      for (let i = 0; i < 50; i++) {
        for (const era of ['legacy', 'modern'] as const) {
          // A distinct client each time: the SDK answers, nothing kept is reused.
          const { status, body } = await post(era, 'tools/list', `client-${i}`);
          expect([era, i, status, body.result?.tools?.length]).toEqual([era, i, 200, 6]);
        }
      }
      expect(built).toHaveBeenCalledTimes(2);
    } finally {
      built.mockRestore();
    }
  });

  test('concurrent requests each get a server of their own, given back for the next', async () => {
    const built = jest.spyOn(mcpServer, 'buildMcpServer');
    try {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => post('modern', 'resources/list', `burst-${i}`)),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
      const builtForBurst = built.mock.calls.length;
      expect(builtForBurst).toBeLessThanOrEqual(8);
      for (let i = 0; i < 8; i++) await post('modern', 'resources/list', `after-${i}`);
      expect(built).toHaveBeenCalledTimes(builtForBurst);
    } finally {
      built.mockRestore();
    }
  });

  test('an exchange answered by the SDK, then from its kept answer: the same type and bytes', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      const first = await post(era, 'tools/list', `asked twice, ${era}`);
      const again = await post(era, 'tools/list', `asked twice, ${era}`);
      expect([era, again.status, again.type, again.text]).toEqual([
        era,
        200,
        first.type,
        first.text,
      ]);
    }
  });
});
