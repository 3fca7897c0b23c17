import Database from 'better-sqlite3';
import path from 'node:path';
import { CATALOG_DATABASE_FILE } from '../../services/catalog/src/store/embedded-store';
import { newTool } from '../support/catalog';
import { waitFor } from '../support/ports';
import { RedisServer } from '../support/redis-server';
import {
  CATALOG_CLI,
  KEYS_CLI,
  ServiceProcess,
  importFile,
  keyedGet,
  registerKey,
  runCli,
  tempDataDir,
} from '../support/services';
import { dataset, embeddedStore } from '../support/catalog';
import { PROPAGATION_MS, SHUTDOWN_GRACE_MS, within } from '../support/waits';

const REPLICAS = 4;

/**
 * A change takes effect on every replica within a second even when nothing announces it: the
 * change feed (Redis) is down, or the CLI that made the change died before announcing it. The
 * key store's change log and the catalog's version are read by every replica, so the stores
 * alone carry the change. The CLIs report what they stored: a change whose announcement failed
 * is a success with a warning.
 */
describe('changes reach every replica when their announcement does not', () => {
  let redis: RedisServer;
  let catalog: ServiceProcess;
  const gateways: ServiceProcess[] = [];
  const keysEnv: Record<string, string> = { DATA_DIR: tempDataDir() };
  const catalogEnv: Record<string, string> = { DATA_DIR: tempDataDir() };

  beforeAll(async () => {
    redis = await RedisServer.start();
    keysEnv.REDIS_URL = redis.url;
    catalogEnv.REDIS_URL = redis.url;
    catalog = await ServiceProcess.start('catalog', catalogEnv);
    for (let i = 0; i < REPLICAS; i++) {
      gateways.push(
        await ServiceProcess.start('gateway', {
          ...keysEnv,
          CATALOG_URL: catalog.url,
          REGISTRATIONS_PER_HOUR: '1000',
        }),
      );
    }
  }, 60_000);

  afterAll(async () => {
    await Promise.all([...gateways.map((g) => g.stop()), catalog.stop()]);
    await redis.stop();
  });

  const status = async (gateway: ServiceProcess, key: string, url = '/v1/categories') =>
    (await keyedGet(gateway.url, key, url)).status;

  /**
   * Probes every replica every 20 ms until each one's answer passes `changed`; no probe sent a
   * second or more after `committedAt` may have missed the change, however slowly the machine
   * answers.
   */
  async function everyReplicaWithinOneSecond(
    committedAt: number,
    changed: (gateway: ServiceProcess) => Promise<boolean>,
  ) {
    const lastMiss = await Promise.all(
      gateways.map(async (gateway) => {
        let missedAt = committedAt;
        await waitFor(
          async () => {
            const sentAt = Date.now();
            if (await changed(gateway)) return true;
            missedAt = sentAt;
            return undefined;
          },
          {
            timeoutMs: within(PROPAGATION_MS),
            intervalMs: 20,
            what: `the change on ${gateway.url}`,
          },
        );
        return missedAt;
      }),
    );
    expect(Math.max(...lastMiss) - committedAt).toBeLessThan(PROPAGATION_MS);
  }

  /** A CLI's JSON on stdout, its warnings on stderr, and no stack lines anywhere. */
  function parseReport(result: { code: number | null; stdout: string; stderr: string }) {
    expect(result.stderr).not.toMatch(/Unhandled error event|\n\s+at /);
    expect(result.code).toBe(0);
    return JSON.parse(result.stdout) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  }

  describe('while Redis is down', () => {
    let revokedKey: string;
    /** A second catalog and gateway, stopped during the outage. */
    let leaving: ServiceProcess[];

    beforeAll(async () => {
      const otherCatalog = await ServiceProcess.start('catalog', {
        ...catalogEnv,
        DATA_DIR: tempDataDir(),
      });
      leaving = [
        otherCatalog,
        await ServiceProcess.start('gateway', { ...keysEnv, CATALOG_URL: otherCatalog.url }),
      ];
      revokedKey = await registerKey(gateways[0]!.url);
      // Every replica has the key cached, as under traffic.
      for (const gateway of gateways) expect(await status(gateway, revokedKey)).toBe(200);
      await redis.stop();
    });

    afterAll(async () => {
      await redis.restart();
    });

    test('SIGTERM: each service stops at once and exits 0, not waiting for Redis', async () => {
      for (const service of leaving) {
        const started = Date.now();
        const code = await service.stop();
        // A failed shutdown shows what the service said last.
        expect({ code, said: code === 0 ? [] : service.output.slice(-20) }).toEqual({
          code: 0,
          said: [],
        });
        // A service waiting on Redis would reach the grace period and exit 1.
        expect(Date.now() - started).toBeLessThan(SHUTDOWN_GRACE_MS);
        expect(service.output.join('\n')).not.toContain('Unhandled error event');
      }
    });

    test('a revoked key is refused by every replica within a second; the CLI says it revoked it', async () => {
      const result = await runCli(KEYS_CLI, ['revoke', revokedKey], keysEnv);
      const report = parseReport(result);
      expect(report.status).toBe('revoked');
      expect(report.warnings).toEqual([expect.stringContaining('The change is stored')]);
      expect(result.stderr).toContain('"warning"');
      await everyReplicaWithinOneSecond(
        Date.parse(report.revokedAt),
        async (gateway) => (await status(gateway, revokedKey)) === 401,
      );
    });

    test('a key created by the CLI is printed, with a warning, and works on every replica', async () => {
      const startedAt = Date.now();
      const result = await runCli(
        KEYS_CLI,
        ['create', '--tier', 'pro', '--email', 'outage@example.com', '--name', 'Outage'],
        keysEnv,
      );
      const report = parseReport(result);
      expect(report.apiKey).toMatch(/^tdk_/);
      expect(report.warnings).toHaveLength(1);
      // The key exists once: the same email again is refused for that reason, not a failure.
      const again = await runCli(
        KEYS_CLI,
        ['create', '--tier', 'pro', '--email', 'outage@example.com', '--name', 'Outage'],
        keysEnv,
      );
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('An active key already exists');
      await everyReplicaWithinOneSecond(
        startedAt,
        async (gateway) =>
          (await status(gateway, report.apiKey, '/v1/compare/langchain/llamaindex')) === 200,
      );
    });

    test('a catalog import is reported as done, with a warning, and served by every replica', async () => {
      const slug = dataset.tools[0]!.slug;
      const url = `/v1/tools/${slug}`;
      const key = await registerKey(gateways[0]!.url);
      // Cached on every replica: the second answer is kept, the third comes from the cache.
      for (const gateway of gateways) {
        await keyedGet(gateway.url, key, url);
        await keyedGet(gateway.url, key, url);
        expect((await keyedGet(gateway.url, key, url)).headers.get('x-cache')).toBe('HIT');
      }
      const result = await runCli(
        CATALOG_CLI,
        ['import', importFile([{ ...dataset.tools[0]!, pricing: 'Changed during an outage' }])],
        catalogEnv,
      );
      const report = parseReport(result);
      expect(report.updated).toEqual([{ slug, changedFields: ['pricing'] }]);
      expect(report.warnings).toHaveLength(1);
      await everyReplicaWithinOneSecond(
        committedAt(slug),
        async (gateway) =>
          (await keyedGet(gateway.url, key, url)).body.data.pricing === 'Changed during an outage',
      );
    });
  });

  test('a catalog change whose CLI died before announcing it is served by every replica within a second', async () => {
    const key = await registerKey(gateways[0]!.url);
    const tool = newTool({ slug: 'unannounced-tool', name: 'Unannounced Tool' });
    const url = '/v1/tools/unannounced-tool';
    for (const gateway of gateways)
      expect((await keyedGet(gateway.url, key, url)).status).toBe(404);
    // The CLI's write, without what follows it: the store commits, nobody announces.
    const store = embeddedStore(catalogEnv.DATA_DIR);
    try {
      await store.upsert([tool]);
    } finally {
      await store.close();
    }
    await everyReplicaWithinOneSecond(
      committedAt(tool.slug),
      async (gateway) => (await keyedGet(gateway.url, key, url)).status === 200,
    );
  });

  /** When the catalog's last change of `slug` was committed, from its outbox. */
  function committedAt(slug: string): number {
    const db = new Database(path.join(catalogEnv.DATA_DIR!, CATALOG_DATABASE_FILE), {
      readonly: true,
    });
    try {
      const row = db
        .prepare<[string], { at: string }>(
          'SELECT at FROM outbox WHERE slug = ? ORDER BY version DESC LIMIT 1',
        )
        .get(slug);
      if (!row) throw new Error(`no change of ${slug} in the outbox`);
      return Date.parse(row.at);
    } finally {
      db.close();
    }
  }
});
