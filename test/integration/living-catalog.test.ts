import path from 'node:path';
import type { Tool } from '../../services/catalog/src/schemas/tool';
import { INTERNAL_HEADERS } from '../../services/shared/contract';
import { dataset, newTool } from '../support/catalog';
import { withinOneSecond } from '../support/ports';
import { RedisServer } from '../support/redis-server';
import {
  CATALOG_CLI,
  importFile,
  INTERNAL_TOKEN,
  ServiceProcess,
  freeAndProKeys,
  keyedGet,
  runCli,
  tempDataDir,
} from '../support/services';
import { PROPAGATION_MS } from '../support/waits';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The living catalog end to end (docs/api.md#catalog-changes-and-freshness): operators change the
 * catalog with `npm run catalog` while the real catalog and gateway processes run; every tier sees
 * the change through the gateway within a second, and a restart keeps it.
 */
describe('operator changes reach clients through the running stack', () => {
  const dataDir = tempDataDir();
  const env = { DATA_DIR: dataDir };
  let catalog: ServiceProcess;
  let gateway: ServiceProcess;
  let keys: Record<'free' | 'pro', string>;

  beforeAll(async () => {
    catalog = await ServiceProcess.start('catalog', env);
    gateway = await ServiceProcess.start('gateway', { ...env, CATALOG_URL: catalog.url });
    keys = await freeAndProKeys(env, 'living.example');
  });
  afterAll(async () => {
    await Promise.all([gateway.stop(), catalog.stop()]);
  });

  const get = (url: string, tier: 'free' | 'pro', headers: Record<string, string> = {}) =>
    keyedGet(gateway.url, keys[tier], url, headers);

  const categoryCount = async (tier: 'free' | 'pro', name: string) =>
    ((await get('/v1/categories', tier)).body.data as { name: string; toolCount: number }[]).find(
      (c) => c.name === name,
    )?.toolCount;

  /** Every read route, for every tier, serves `expected` for the tool (null: gone). */
  async function servedEverywhere(slug: string, expected: Partial<Tool> | null): Promise<boolean> {
    for (const tier of ['free', 'pro'] as const) {
      const detail = await get(`/v1/tools/${slug}`, tier);
      const list = await get(`/v1/tools?limit=100&search=zephyr`, tier);
      const search = await get('/v1/search?q=zephyr', tier);
      const inList = (list.body.data as Tool[]).find((t) => t.slug === slug);
      const inSearch = (search.body.data as Tool[]).find((t) => t.slug === slug);
      if (expected === null) {
        if (detail.status !== 404 || inList || inSearch) return false;
        continue;
      }
      for (const [field, value] of Object.entries(expected)) {
        for (const record of [detail.body.data, inList, inSearch]) {
          if (JSON.stringify(record?.[field]) !== JSON.stringify(value)) return false;
        }
      }
    }
    return true;
  }

  test('import: a new tool is in detail, list, search and category counts for every tier within 1 s', async () => {
    // Read everything once first, so that stale cache entries would show.
    await servedEverywhere('zephyr-notes', null);
    const counted = await categoryCount('free', newTool().category);
    const result = await runCli(
      CATALOG_CLI,
      ['import', importFile([newTool(), dataset.tools[0]])],
      env,
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      created: ['zephyr-notes'],
      unchanged: [dataset.tools[0]!.slug],
    });
    await withinOneSecond(
      'the new tool everywhere',
      async () =>
        (await servedEverywhere('zephyr-notes', { name: 'Zephyr Notes' })) &&
        (await categoryCount('free', newTool().category)) === counted! + 1 &&
        (await categoryCount('pro', newTool().category)) === counted! + 1,
    );
  });

  test('update: the old data is gone everywhere within 1 s, with a new ETag', async () => {
    const before = await get('/v1/tools/zephyr-notes', 'pro');
    const result = await runCli(
      CATALOG_CLI,
      ['import', importFile([newTool({ pricing: 'Updated pricing' })], 'json')],
      env,
    );
    expect(JSON.parse(result.stdout).updated).toEqual([
      { slug: 'zephyr-notes', changedFields: ['pricing'] },
    ]);
    await withinOneSecond('the new pricing everywhere', () =>
      servedEverywhere('zephyr-notes', { pricing: 'Updated pricing' }),
    );
    const after = await get('/v1/tools/zephyr-notes', 'pro', {
      'if-none-match': before.headers.get('etag')!,
    });
    expect(after.status).toBe(200);
    expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
  });

  test('through the gateway: 304 for a repeated request, with the rate-limit headers and no unit used', async () => {
    for (const url of [
      '/v1/tools?limit=3',
      '/v1/tools/zephyr-notes',
      '/v1/categories',
      '/v1/search?q=zephyr',
    ]) {
      const first = await get(url, 'pro');
      const etag = first.headers.get('etag')!;
      expect(etag).toBeTruthy();
      expect(first.headers.get('vary')?.toLowerCase()).toContain('x-api-key');
      const again = await get(url, 'pro', { 'if-none-match': etag });
      expect(again.status).toBe(304);
      expect(Number(again.headers.get('x-ratelimit-remaining'))).toBe(
        Number(first.headers.get('x-ratelimit-remaining')),
      );
      expect(again.headers.get('ratelimit-policy')).toBeTruthy();
      // A Free key's ETag is not a Pro key's.
      const free = await get(url, 'free');
      expect((await get(url, 'pro', { 'if-none-match': free.headers.get('etag')! })).status).toBe(
        200,
      );
    }
    const compare = `/v1/compare/${dataset.tools[0]!.slug}/zephyr-notes`;
    const first = await get(compare, 'pro');
    expect(
      (await get(compare, 'pro', { 'if-none-match': first.headers.get('etag')! })).status,
    ).toBe(304);
  });

  test('a bad import changes nothing, names the record and the field, and exits 1', async () => {
    const bad = newTool({ slug: 'broken-tool', name: 'Broken Tool', website: 'not a url' });
    const result = await runCli(
      CATALOG_CLI,
      ['import', importFile([newTool({ pricing: 'Must not land' }), bad])],
      env,
    );
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stderr).error).toMatch(/broken-tool: website/);
    // Anything that landed would be served within this.
    await new Promise((r) => setTimeout(r, PROPAGATION_MS));
    expect((await get('/v1/tools/zephyr-notes', 'pro')).body.data.pricing).toBe('Updated pricing');
    expect((await get('/v1/tools/broken-tool', 'pro')).status).toBe(404);
  });

  test('export then re-import reports every record unchanged (the rollback path)', async () => {
    const out = path.join(tempDataDir(), 'export.ndjson');
    const exported = await runCli(CATALOG_CLI, ['export', '--format', 'ndjson', '--out', out], env);
    expect(exported.code).toBe(0);
    expect(JSON.parse(exported.stderr)).toMatchObject({ exported: dataset.tools.length + 1 });
    const reimported = await runCli(CATALOG_CLI, ['import', out], env);
    const summary = JSON.parse(reimported.stdout);
    expect(summary.unchanged).toHaveLength(dataset.tools.length + 1);
    expect(summary.created.length + summary.updated.length).toBe(0);
  });

  test('delete: a 404 and out of search within 1 s; a restart keeps every change', async () => {
    const victim = dataset.tools[4]!.slug;
    const result = await runCli(CATALOG_CLI, ['delete', victim], env);
    expect(JSON.parse(result.stdout).deleted).toEqual([victim]);
    await withinOneSecond(
      'the deleted tool gone',
      async () => (await get(`/v1/tools/${victim}`, 'free')).status === 404,
    );
    expect((await runCli(CATALOG_CLI, ['delete', victim], env)).code).toBe(1);

    await catalog.stop();
    catalog = await ServiceProcess.start('catalog', { ...env, CATALOG_PORT: String(catalog.port) });
    expect((await get(`/v1/tools/${victim}`, 'pro')).status).toBe(404);
    expect((await get('/v1/tools/zephyr-notes', 'pro')).body.data.pricing).toBe('Updated pricing');
  });
});

describe('two catalog replicas sharing Redis', () => {
  let redis: RedisServer;
  let catalogs: ServiceProcess[];
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };

  beforeAll(async () => {
    redis = await RedisServer.start();
    env.REDIS_URL = redis.url;
    catalogs = [];
    for (let i = 0; i < 2; i++) catalogs.push(await ServiceProcess.start('catalog', env));
  });
  afterAll(async () => {
    await Promise.all(catalogs.map((c) => c.stop()));
    await redis.stop();
  });

  const pricing = async (catalog: ServiceProcess) => {
    const response = await fetch(`${catalog.url}/v1/tools/${dataset.tools[9]!.slug}`, {
      headers: { [INTERNAL_HEADERS.token]: INTERNAL_TOKEN, [INTERNAL_HEADERS.tier]: 'pro' },
    });
    return ((await response.json()) as Json).data.pricing as string;
  };

  test('a change is served by both within 1 s, and neither serves the old data after', async () => {
    await Promise.all(catalogs.map(pricing)); // cached on both
    const changed = { ...dataset.tools[9]!, pricing: 'Changed across replicas' };
    const result = await runCli(CATALOG_CLI, ['import', importFile([changed])], env);
    expect(result.code).toBe(0);
    await withinOneSecond('both replicas', async () =>
      (await Promise.all(catalogs.map(pricing))).every((p) => p === changed.pricing),
    );
  });
});
