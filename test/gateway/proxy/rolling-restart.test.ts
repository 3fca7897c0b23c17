import { Client } from 'undici';
import { freePort, waitFor } from '../../support/ports';
import { ServiceProcess, registerKey, tempDataDir } from '../../support/services';
import { TcpForwarder } from '../../support/tcp-forwarder';
import { GATEWAY_ANSWER_MS } from '../../support/waits';

const RESTARTS = 5;
/**
 * Whether a restart closes a connection under one of the gateway's requests is a race; on a
 * slow run five restarts can miss it every time. More restarts follow until one does.
 */
const MAX_RESTARTS = 15;

/**
 * docs/api.md#health-request-ids-and-tracing: a rolling restart of the catalog under load fails no
 * request. Two catalogs stand behind a balancer, as two pods behind a Service; each in turn gets
 * SIGTERM and is replaced on its port while 20 keep-alive clients keep calling the gateway. One
 * catalog drains for a while before closing (SHUTDOWN_DELAY_MS), the other closes at once.
 */
describe('rolling restart of the catalog under keep-alive load', () => {
  test(`${RESTARTS} or more restarts, every response 200`, async () => {
    // Fixed ports: a replacement takes its predecessor's place behind the balancer.
    const catalogEnv = await Promise.all(
      ['0', '500'].map(async (delay) => ({
        SHUTDOWN_DELAY_MS: delay,
        CATALOG_PORT: String(await freePort()),
      })),
    );
    const catalogs = await Promise.all(
      catalogEnv.map((env) => ServiceProcess.start('catalog', env)),
    );
    const balancer = await TcpForwarder.start(catalogs.map((c) => c.port));
    const gateway = await ServiceProcess.start('gateway', {
      CATALOG_URL: balancer.url,
      DATA_DIR: tempDataDir(),
      QUOTA_FREE: '10000000',
      // Every request reaches the catalog: its restarts are what this test is about.
      RESPONSE_CACHE: 'off',
    });

    const outcomes = { ok: 0, failures: [] as string[] };
    let stop = false;
    const exitCodes: (number | null)[] = [];
    const okDuringRestart: number[] = [];
    const clients: Client[] = [];
    let workers: Promise<void>[] = [];
    let retried: number | undefined;
    try {
      const key = await registerKey(gateway.url);
      const list = await fetch(`${gateway.url}/v1/tools?limit=5`, {
        headers: { 'x-api-key': key },
      });
      const slugs = ((await list.json()) as { data: { slug: string }[] }).data.map((t) => t.slug);
      const paths = ['/v1/tools?limit=5', ...slugs.map((slug) => `/v1/tools/${slug}`)];

      const worker = async (client: Client, n: number) => {
        for (let i = n; !stop; i++) {
          const path = paths[i % paths.length]!;
          try {
            const response = await client.request({
              path,
              method: 'GET',
              headers: { 'x-api-key': key },
            });
            const body = await response.body.text();
            if (response.statusCode === 200) outcomes.ok += 1;
            else outcomes.failures.push(`${path}: ${response.statusCode} ${body}`);
          } catch (err) {
            const { code, message } = err as { code?: string; message: string };
            outcomes.failures.push(`${path}: ${code ?? ''} ${message}`);
          }
        }
      };
      for (let n = 0; n < 20; n++) {
        clients.push(new Client(gateway.url, { keepAliveTimeout: 60_000, pipelining: 1 }));
      }
      workers = clients.map((client, n) => worker(client, n));
      const served = (atLeast: number) =>
        waitFor(async () => (outcomes.ok >= atLeast ? true : undefined), {
          timeoutMs: GATEWAY_ANSWER_MS,
          what: `${atLeast} answered requests`,
        });
      await served(200);

      const retriesSoFar = async () =>
        Number(
          (await gateway.metrics()).match(/^gateway_upstream_retries_total\{[^}]*\} (\d+)/m)?.[1] ??
            0,
        );
      for (
        let restart = 0;
        restart < RESTARTS || (restart < MAX_RESTARTS && retried === 0);
        restart++
      ) {
        const slot = restart % catalogs.length;
        const before = outcomes.ok;
        exitCodes.push(await catalogs[slot]!.stop('SIGTERM'));
        catalogs[slot] = await ServiceProcess.start('catalog', catalogEnv[slot]!);
        okDuringRestart.push(outcomes.ok - before);
        // The new catalog takes its share of the load before the other one goes.
        await served(outcomes.ok + 200);
        retried = await retriesSoFar();
      }
    } finally {
      stop = true;
      await Promise.all(workers);
      await Promise.all(clients.map((client) => client.destroy()));
      await gateway.stop();
      await balancer.close();
      await Promise.all(catalogs.map((catalog) => catalog.stop()));
    }

    const failed = outcomes.failures.length;
    expect({ failed, first: outcomes.failures.slice(0, 5) }).toEqual({ failed: 0, first: [] });
    expect(exitCodes).toEqual(Array(exitCodes.length).fill(0));
    expect(exitCodes.length).toBeGreaterThanOrEqual(RESTARTS);
    // Load kept flowing through every restart.
    for (const ok of okDuringRestart) expect(ok).toBeGreaterThan(0);
    // The restarts did close connections under the gateway's requests, which it sent again.
    expect(retried).toBeGreaterThan(0);
  }, 180_000);
});
