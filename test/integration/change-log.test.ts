import { dataset, newTool } from '../support/catalog';
import { waitFor } from '../support/ports';
import {
  CATALOG_CLI,
  ServiceProcess,
  freeAndProKeys,
  importFile,
  keyedGet,
  runCli,
  tempDataDir,
} from '../support/services';
import { PROPAGATION_MS, within } from '../support/waits';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ADMIN_TOKEN = 'change-log-admin-token-0123456789';

/**
 * The catalog's memory end to end (docs/api.md#staying-in-sync): operators change the catalog
 * through the CLI and both replicas' admin endpoints; a client of either replica, through its
 * gateway, sees each change exactly once and in order in the change log and the tool's history,
 * and its cursor holds across a restart. The replicas share DATA_DIR, as the embedded store's
 * processes do.
 */
describe('change log and history on two catalog replicas', () => {
  const dataDir = tempDataDir();
  const env = { DATA_DIR: dataDir };
  const catalogEnv = { ...env, ADMIN_TOKEN };
  const catalogs: ServiceProcess[] = [];
  const gateways: ServiceProcess[] = [];
  let key: string;

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) catalogs.push(await ServiceProcess.start('catalog', catalogEnv));
    for (const catalog of catalogs) {
      gateways.push(await ServiceProcess.start('gateway', { ...env, CATALOG_URL: catalog.url }));
    }
    key = (await freeAndProKeys(env, 'change-log.example')).pro;
  });
  afterAll(async () => {
    await Promise.all([...gateways, ...catalogs].map((service) => service.stop()));
  });

  const get = (replica: number, url: string) => keyedGet(gateways[replica]!.url, key, url);

  /** Every change after `since` through replica `replica`'s gateway, and the cursor to go on. */
  async function follow(replica: number, since?: string) {
    const changes: Json[] = [];
    let cursor = since;
    for (;;) {
      const { status, body } = await get(
        replica,
        `/v1/changes?limit=50${cursor === undefined ? '' : `&since=${cursor}`}`,
      );
      expect(status).toBe(200);
      changes.push(...body.data);
      cursor = body.meta.nextCursor as string;
      if (!body.meta.hasMore) return { changes, cursor: cursor! };
    }
  }

  async function admin(replica: number, method: 'PUT' | 'DELETE', slug: string, body?: Json) {
    const response = await fetch(`${catalogs[replica]!.url}/admin/v1/tools/${slug}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        ...(body && { 'content-type': 'application/json' }),
      },
      ...(body && { body: JSON.stringify(body) }),
    });
    expect([method, slug, response.status]).toEqual([
      method,
      slug,
      response.ok ? response.status : 'ok',
    ]);
  }

  const EXPECTED = [
    ['tool.created', 'zephyr-notes'],
    ['tool.updated', 'zephyr-notes'],
    ['tool.updated', 'zephyr-notes'],
    ['tool.updated', dataset.tools[0]!.slug],
    ['tool.deleted', 'zephyr-notes'],
  ];
  let start: string;

  test('CLI import, admin updates on each replica and an admin delete: each once, in order, on both', async () => {
    start = (await follow(0)).cursor;
    expect((await follow(1)).cursor).toBe(start);

    const created = await runCli(CATALOG_CLI, ['import', importFile([newTool()])], env);
    expect(created.code).toBe(0);
    await admin(1, 'PUT', 'zephyr-notes', newTool({ pricing: 'Paid' }));
    const website = 'https://zephyr.example/notes';
    await admin(0, 'PUT', 'zephyr-notes', newTool({ pricing: 'Paid', website }));
    const edited = {
      ...dataset.tools[0]!,
      description: `${dataset.tools[0]!.description} Edited through the CLI.`,
    };
    // The CLI sends the bundled tools too: unchanged ones record nothing.
    const imported = await runCli(
      CATALOG_CLI,
      ['import', importFile([edited, dataset.tools[1]])],
      env,
    );
    expect([imported.code, imported.stderr]).toEqual([0, '']);
    await admin(1, 'DELETE', 'zephyr-notes');

    for (const replica of [0, 1]) {
      const { changes } = await waitFor(
        async () => {
          const seen = await follow(replica, start);
          return seen.changes.length >= EXPECTED.length ? seen : undefined;
        },
        { timeoutMs: within(PROPAGATION_MS), what: `replica ${replica}'s change log` },
      );
      expect(changes.map((c) => [c.type, c.slug])).toEqual(EXPECTED);
      expect(changes.map((c) => c.changedFields)).toEqual([
        undefined,
        ['pricing'],
        ['website'],
        ['description'],
        undefined,
      ]);
      expect(changes[2]!.tool).toMatchObject({ pricing: 'Paid', website });
    }

    for (const replica of [0, 1]) {
      const { status, body } = await get(replica, '/v1/tools/zephyr-notes/history');
      expect(status).toBe(200);
      expect(body.data.map((e: Json) => e.type)).toEqual([
        'tool.deleted',
        'tool.updated',
        'tool.updated',
        'tool.created',
      ]);
      expect(body.data[1].changes).toEqual({
        website: { from: newTool().website, to: 'https://zephyr.example/notes' },
      });
      expect(body.data[2].changes).toEqual({ pricing: { from: newTool().pricing, to: 'Paid' } });
      // The log reads the store itself; the records follow within the second every change takes.
      await waitFor(
        async () =>
          (await get(replica, '/v1/tools/zephyr-notes')).status === 404 ? true : undefined,
        { timeoutMs: within(PROPAGATION_MS), what: `replica ${replica} serving the deletion` },
      );
    }
  });

  test('a cursor from before a restart continues where it was', async () => {
    const { port } = catalogs[0]!;
    await catalogs[0]!.stop();
    catalogs[0] = await ServiceProcess.start('catalog', {
      ...catalogEnv,
      CATALOG_PORT: String(port),
    });
    const { changes } = await follow(0, start);
    expect(changes.map((c) => [c.type, c.slug])).toEqual(EXPECTED);
  });

  test('past CHANGES_RETENTION_DAYS a cursor is 410 with the way back, on every replica; a fresh start is 200', async () => {
    const { port } = catalogs[1]!;
    await catalogs[1]!.stop();
    // A tenth of a second.
    catalogs[1] = await ServiceProcess.start('catalog', {
      ...catalogEnv,
      CATALOG_PORT: String(port),
      CHANGES_RETENTION_DAYS: String(0.1 / 86_400),
    });
    const gone = await get(1, `/v1/changes?since=${start}`);
    expect(gone.status).toBe(410);
    expect(gone.headers.get('content-type')).toMatch(/^application\/json/);
    expect(gone.body.error).toMatch(/GET \/v1\/tools\?updatedSince=/);
    const fresh = await get(1, '/v1/changes');
    expect(fresh.status).toBe(200);
    expect(fresh.body.data).toEqual([]);
    // The replicas share one outbox, which the short retention pruned: the other says so too.
    await waitFor(
      async () => ((await get(0, `/v1/changes?since=${start}`)).status === 410 ? true : undefined),
      { timeoutMs: within(1_000), what: 'the prune' },
    );
  });
});
