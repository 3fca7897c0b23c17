import { newTool } from '../support/catalog';
import { waitFor } from '../support/ports';
import {
  CATALOG_CLI,
  KEYS_CLI,
  ServiceProcess,
  importFile,
  keyedGet,
  keysCli,
  registerKey,
  runCli,
} from '../support/services';
import { fill, mountTmpfs, unmount } from '../support/tmpfs';

const ADMIN_TOKEN = 'storage-full-admin-token';

/**
 * A full disk under DATA_DIR: every write that cannot be stored is a 503 saying the storage is
 * full, with Retry-After (never a 500); every answer matches the store (a write answered 2xx is
 * served, a refused one is not); `/readyz` says writes are unavailable while reads go on; it all
 * recovers once space returns.
 */
describe('a full disk under DATA_DIR', () => {
  let dataDir: string;
  let catalog: ServiceProcess;
  let gateway: ServiceProcess;
  let enterpriseKey: string;
  let freeKey: string;
  let filler: { free: () => void };
  const env = () => ({ DATA_DIR: dataDir });

  beforeAll(async () => {
    dataDir = mountTmpfs(16 * 1024);
    catalog = await ServiceProcess.start('catalog', {
      ...env(),
      ADMIN_TOKEN,
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    gateway = await ServiceProcess.start('gateway', {
      ...env(),
      CATALOG_URL: catalog.url,
      REGISTRATIONS_PER_HOUR: '1000',
    });
    freeKey = await registerKey(gateway.url);
    enterpriseKey = (
      (await keysCli(
        ['create', '--tier', 'enterprise', '--email', 'full@example.com', '--name', 'Full'],
        env(),
      )) as { apiKey: string }
    ).apiKey;
  }, 60_000);

  afterAll(async () => {
    await Promise.all([gateway?.stop(), catalog?.stop()]);
    if (dataDir) unmount(dataDir);
  });

  const adminPut = (slug: string, record: unknown) =>
    fetch(`${catalog.url}/admin/v1/tools/${slug}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(record),
    });

  /**
   * Writes until the disk refuses one (SQLite may still fit a write or two in space it holds);
   * every answer must match the store, and the refusal must be the API's 503.
   */
  async function writeUntilRefused(
    write: (n: number) => Promise<Response>,
    stored: (n: number) => Promise<boolean>,
  ): Promise<Response> {
    for (let n = 0; n < 200; n++) {
      const response = await write(n);
      if (response.status === 503) {
        expect(await stored(n)).toBe(false);
        return response;
      }
      expect(response.status).toBeLessThan(300);
      await waitFor(async () => ((await stored(n)) ? true : undefined), {
        what: `write ${n} answered ${response.status} to be served`,
      });
    }
    throw new Error('the full disk never refused a write');
  }

  async function expectStorageFull(response: Response) {
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('60');
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(((await response.json()) as { error: string }).error).toContain('the storage is full');
  }

  describe('while it is full', () => {
    beforeAll(() => {
      filler = fill(dataDir);
    });

    test('registration: 503, the storage is full, Retry-After; the refused key is not stored', async () => {
      const email = (n: number) => `nospace-${n}@example.com`;
      const refused = await writeUntilRefused(
        (n) =>
          fetch(`${gateway.url}/v1/register`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ email: email(n), name: 'No Space' }),
          }),
        async (n) =>
          ((await keysCli(['list'], env())) as { email: string }[]).some(
            (k) => k.email === email(n),
          ),
      );
      await expectStorageFull(refused);
    });

    test('admin writes and webhook subscriptions: 503 once refused, never half-stored', async () => {
      const slug = (n: number) => `no-space-tool-${n}`;
      const refusedPut = await writeUntilRefused(
        (n) => adminPut(slug(n), newTool({ slug: slug(n), name: `No Space Tool ${n}` })),
        async (n) => (await keyedGet(gateway.url, freeKey, `/v1/tools/${slug(n)}`)).status === 200,
      );
      await expectStorageFull(refusedPut);

      const ids: string[] = [];
      const refusedSubscription = await writeUntilRefused(
        async (n) => {
          // At most 10 subscriptions a key: each is deleted again, which writes too.
          for (const id of ids.splice(0)) {
            await fetch(`${gateway.url}/v1/webhooks/${id}`, {
              method: 'DELETE',
              headers: { 'x-api-key': enterpriseKey },
            });
          }
          const response = await fetch(`${gateway.url}/v1/webhooks`, {
            method: 'POST',
            headers: { 'x-api-key': enterpriseKey, 'content-type': 'application/json' },
            body: JSON.stringify({
              url: 'http://127.0.0.1:9/hook',
              events: ['tool.created'],
              description: `subscription ${n}`,
            }),
          });
          if (response.status === 201)
            ids.push(((await response.clone().json()) as { id: string }).id);
          return response;
        },
        async (n) =>
          (
            (await keyedGet(gateway.url, enterpriseKey, '/v1/webhooks')).body.data as {
              description?: string;
            }[]
          ).some((subscription) => subscription.description === `subscription ${n}`),
      );
      await expectStorageFull(refusedSubscription);
    });

    test('the CLIs exit 75 with the JSON error on stderr and store nothing', async () => {
      const created = await runCli(
        KEYS_CLI,
        ['create', '--email', 'cli-full@example.com', '--name', 'Cli'],
        env(),
      );
      expect(created.code).toBe(75);
      expect(created.stdout).toBe('');
      expect(JSON.parse(created.stderr)).toEqual({
        error: expect.stringContaining('the storage is full'),
      });
      const listed = (await keysCli(['list'], env())) as { email: string }[];
      expect(listed.map((k) => k.email)).not.toContain('cli-full@example.com');

      const imported = await runCli(
        CATALOG_CLI,
        ['import', importFile([newTool({ slug: 'cli-full-tool', name: 'Cli Full Tool' })])],
        env(),
      );
      expect(imported.code).toBe(75);
      expect(JSON.parse(imported.stderr)).toEqual({
        error: expect.stringContaining('the storage is full'),
      });
      expect((await keyedGet(gateway.url, freeKey, '/v1/tools/cli-full-tool')).status).toBe(404);
    });

    test('/readyz: both services ready, writes unavailable; reads are served', async () => {
      for (const service of [gateway, catalog]) {
        const response = await fetch(`${service.url}/readyz`);
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({
          status: 'ready',
          writes: { status: 'unavailable', reason: expect.stringContaining('full') },
        });
      }
      expect((await keyedGet(gateway.url, freeKey, '/v1/tools?limit=5')).status).toBe(200);
      expect((await keyedGet(gateway.url, freeKey, '/v1/search?q=vector')).status).toBe(200);
    });

    test('space returns: writes work again without a restart, and /readyz says so', async () => {
      filler.free();
      for (const service of [gateway, catalog]) {
        await waitFor(async () =>
          ((await (await fetch(`${service.url}/readyz`)).json()) as { writes?: unknown }).writes ===
          undefined
            ? true
            : undefined,
        );
      }
      const key = await registerKey(gateway.url);
      expect((await keyedGet(gateway.url, key, '/v1/categories')).status).toBe(200);
      const put = await adminPut(
        'space-again',
        newTool({ slug: 'space-again', name: 'Space Again' }),
      );
      expect(put.status).toBe(201);
    });
  });
});
