import { keysCli, registerKey, startStack, tempDataDir } from '../../support/services';

type Stack = Awaited<ReturnType<typeof startStack>>;

/**
 * The bulk export (docs/api.md#enterprise-export-and-webhooks) streamed from the catalog through
 * the gateway, real processes.
 */
describe('bulk export through the gateway', () => {
  const dataDir = tempDataDir();
  let stack: Stack;
  let enterpriseKey: string;

  beforeAll(async () => {
    stack = await startStack({ DATA_DIR: dataDir });
    const created = (await keysCli(
      ['create', '--tier', 'enterprise', '--email', 'export@example.com', '--name', 'Exporter'],
      { DATA_DIR: dataDir },
    )) as { apiKey: string };
    enterpriseKey = created.apiKey;
  });
  afterAll(() => stack.stop());

  test('an Enterprise key gets every tool, with the rate-limit headers and the file name', async () => {
    const [response, categories] = await Promise.all([
      fetch(`${stack.gateway.url}/v1/export?format=ndjson`, {
        headers: { 'x-api-key': enterpriseKey },
      }),
      fetch(`${stack.gateway.url}/v1/categories`, { headers: { 'x-api-key': enterpriseKey } }),
    ]);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    expect(response.headers.get('content-disposition')).toBe(
      'attachment; filename="tool-directory.ndjson"',
    );
    expect(response.headers.get('x-ratelimit-limit')).toBe('50000');
    const lines = (await response.text()).trimEnd().split('\n');
    const { data } = (await categories.json()) as { data: { toolCount: number }[] };
    expect(lines).toHaveLength(data.reduce((sum, c) => sum + c.toolCount, 0));
    expect(Object.keys(JSON.parse(lines[0]!) as object)).toContain('pricingTiers');
  });

  test('a Free key is 403 JSON, still with the rate-limit headers', async () => {
    const response = await fetch(`${stack.gateway.url}/v1/export`, {
      headers: { 'x-api-key': await registerKey(stack.gateway.url) },
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ error: 'This endpoint needs an Enterprise key' });
    expect(response.headers.get('x-ratelimit-remaining')).toBe('99');
  });
});
