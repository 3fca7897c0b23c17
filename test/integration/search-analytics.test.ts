import { freePort, waitFor } from '../support/ports';
import { RedisServer } from '../support/redis-server';
import {
  CATALOG_CLI,
  ServiceProcess,
  keyedGet,
  keysCli,
  runCli,
  tempDataDir,
} from '../support/services';
import { within } from '../support/waits';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const FLUSH_MS = 300;

/**
 * Search analytics end to end (docs/api.md#search-analytics): searches through REST and MCP on
 * two gateway replicas (one DATA_DIR; with and without Redis) are counted per key, and each key reads its own
 * top and no-hit queries on either replica; a gateway with SEARCH_ANALYTICS=off keeps none.
 */
describe.each([
  ['the embedded stack', false],
  ['Redis', true],
])('search analytics on two gateway replicas, %s', (_name, withRedis) => {
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };
  let redis: RedisServer | undefined;
  let catalog: ServiceProcess;
  const gateways: ServiceProcess[] = [];
  let off: ServiceProcess;
  let emails = 0;

  async function newKey(): Promise<string> {
    emails += 1;
    const created = (await keysCli(
      ['create', '--tier', 'free', '--email', `searcher${emails}@example.com`, '--name', 'S'],
      env,
    )) as Json;
    return created.apiKey as string;
  }

  beforeAll(async () => {
    if (withRedis) {
      redis = await RedisServer.start();
      env.REDIS_URL = redis.url;
    }
    catalog = await ServiceProcess.start('catalog', env);
    const gatewayEnv = {
      ...env,
      CATALOG_URL: catalog.url,
      SEARCH_ANALYTICS_FLUSH_MS: String(FLUSH_MS),
    };
    for (let i = 0; i < 2; i++) gateways.push(await ServiceProcess.start('gateway', gatewayEnv));
    off = await ServiceProcess.start('gateway', {
      ...gatewayEnv,
      PORT: String(await freePort()),
      SEARCH_ANALYTICS: 'off',
    });
  }, 60_000);
  afterAll(async () => {
    await Promise.all([...gateways, off].map((g) => g?.stop()));
    await catalog?.stop();
    await redis?.stop();
  });

  const search = (gateway: ServiceProcess, key: string, q: string) =>
    keyedGet(gateway.url, key, `/v1/search?q=${encodeURIComponent(q)}`);

  async function mcpSearch(gateway: ServiceProcess, key: string, q: string) {
    const response = await fetch(`${gateway.url}/v1/mcp`, {
      method: 'POST',
      headers: {
        'x-api-key': key,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'search_tools', arguments: { q } },
      }),
    });
    expect(response.status).toBe(200);
  }

  test('REST and MCP searches on both replicas are counted per key and read on either', async () => {
    const [key, other] = [await newKey(), await newKey()];
    expect((await search(gateways[0]!, key, 'Vector  Database')).status).toBe(200);
    // The same search again: the gateway's cache answers it, and it counts all the same.
    expect((await search(gateways[0]!, key, 'vector database')).status).toBe(200);
    await mcpSearch(gateways[1]!, key, '  VECTOR database ');
    expect((await search(gateways[1]!, key, 'zzqx nothing matches this')).status).toBe(200);
    await mcpSearch(gateways[0]!, key, 'zzqx nothing matches this');
    await search(gateways[0]!, other, 'the other key only');

    for (const gateway of gateways) {
      const report = await waitFor(
        async () => {
          const { status, body } = await keyedGet(gateway.url, key, '/v1/usage/searches?days=7');
          expect(status).toBe(200);
          return body.data.totals.searches === 5 ? body : undefined;
        },
        { timeoutMs: within(FLUSH_MS), what: 'every replica’s searches written' },
      );
      expect(report.data).toMatchObject({
        days: 7,
        recording: true,
        totals: { searches: 5, noHits: 2 },
        top: [
          { query: 'vector database', count: 3 },
          { query: 'zzqx nothing matches this', count: 2 },
        ],
        noHit: [{ query: 'zzqx nothing matches this', count: 2 }],
      });
      expect(JSON.stringify(report)).not.toContain('the other key only');
    }
  });

  test('operators list the searches that found nothing across keys, counting keys, never naming them', async () => {
    const [one, two] = [await newKey(), await newKey()];
    await search(gateways[0]!, one, 'Qwxz Missing Tool');
    await mcpSearch(gateways[1]!, two, 'qwxz missing tool');
    await search(gateways[1]!, two, 'qwxz missing tool');
    for (const gateway of gateways) await keyedGet(gateway.url, one, '/v1/usage/searches');
    const gaps = await waitFor(
      async () => {
        const { code, stdout } = await runCli(CATALOG_CLI, ['gaps', '--days', '1'], env);
        expect(code).toBe(0);
        const printed = JSON.parse(stdout) as Json;
        const gap = (printed.queries as Json[]).find((q) => q.query === 'qwxz missing tool');
        return gap?.count === 3 ? printed : undefined;
      },
      { timeoutMs: within(FLUSH_MS), what: 'the gaps of both replicas' },
    );
    expect(gaps.days).toBe(1);
    expect((gaps.queries as Json[]).find((q) => q.query === 'qwxz missing tool')).toEqual({
      query: 'qwxz missing tool',
      count: 3,
      keys: 2,
      lastAt: expect.stringMatching(/Z$/),
    });
    expect(JSON.stringify(gaps)).not.toMatch(/tdk_|key_/);
    const bad = await runCli(CATALOG_CLI, ['gaps', '--days', '31'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--days must be a whole number from 1 to 30/);
  });

  test('a key of its own reads at once what it searched on this replica; no unit taken', async () => {
    const key = await newKey();
    await search(gateways[1]!, key, 'agents');
    const first = await keyedGet(gateways[1]!.url, key, '/v1/usage/searches');
    expect(first.body.data.top).toEqual([
      { query: 'agents', count: 1, lastAt: expect.stringMatching(/Z$/) },
    ]);
    const second = await keyedGet(gateways[1]!.url, key, '/v1/usage/searches');
    expect(second.headers.get('x-ratelimit-remaining')).toBe(
      first.headers.get('x-ratelimit-remaining'),
    );
  });

  test('bad days: 400; no key: 401', async () => {
    const key = await newKey();
    for (const days of ['0', '31', 'x']) {
      const { status, body } = await keyedGet(
        gateways[0]!.url,
        key,
        `/v1/usage/searches?days=${days}`,
      );
      expect([days, status, typeof body.error]).toEqual([days, 400, 'string']);
    }
    expect((await fetch(`${gateways[0]!.url}/v1/usage/searches`)).status).toBe(401);
  });

  test('SEARCH_ANALYTICS=off keeps none, and says so', async () => {
    const key = await newKey();
    await search(off, key, 'kept nowhere');
    await mcpSearch(off, key, 'kept nowhere');
    const { body } = await keyedGet(off.url, key, '/v1/usage/searches');
    expect(body.data).toMatchObject({ recording: false, totals: { searches: 0, noHits: 0 } });
    // Nor did another replica get it.
    const elsewhere = await keyedGet(gateways[0]!.url, key, '/v1/usage/searches');
    expect(elsewhere.body.data.totals.searches).toBe(0);
  });
});
