import { Client } from 'undici';
import { waitFor } from '../../support/ports';
import { ServiceProcess, registerKey, tempDataDir } from '../../support/services';
import { GATEWAY_ANSWER_MS, within } from '../../support/waits';

const WORKERS = 16;
/** Readiness fails this long before the listener closes. */
const SHUTDOWN_DELAY_MS = 3_000;

/**
 * docs/api.md#health-request-ids-and-tracing: on SIGTERM a service stops taking new connections,
 * finishes what is in flight and exits 0, so a rolling restart under load fails no request.
 *
 * The load is held by 16 keep-alive clients. Like a Kubernetes Service, they stop opening new
 * connections to the pod once its readiness has failed, but keep using the connections they
 * hold until the pod closes them. Nothing is timed: readiness fails for 3 s before the listener
 * closes, time enough for this test to see it on a loaded machine.
 */
describe('SIGTERM under keep-alive load', () => {
  test('zero failed requests, readiness fails at once, in-flight work finishes, exit 0', async () => {
    const catalog = await ServiceProcess.start('catalog', {});
    const gateway = await ServiceProcess.start('gateway', {
      CATALOG_URL: catalog.url,
      DATA_DIR: tempDataDir(),
      QUOTA_FREE: '1000000',
      SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS),
    });
    const key = await registerKey(gateway.url);
    const outcomes = { ok: 0, okAfterSigterm: 0, unavailable: 0, failures: [] as string[] };
    const okPerWorker = Array<number>(WORKERS).fill(0);
    let sigtermSent = false;
    let endpointRemoved = false;
    let stop = false;

    async function worker(_: unknown, index: number) {
      const client = new Client(gateway.url, { keepAliveTimeout: 60_000, pipelining: 1 });
      let connected = false;
      client.on('connect', () => (connected = true));
      client.on('disconnect', () => (connected = false));
      try {
        while (!stop && !(endpointRemoved && !connected)) {
          try {
            const response = await client.request({
              path: '/v1/categories',
              method: 'GET',
              headers: { 'x-api-key': key },
            });
            await response.body.arrayBuffer();
            // A draining server answers `Connection: close`: this connection is finished.
            if (response.headers.connection === 'close') connected = false;
            if (response.statusCode === 200) {
              outcomes.ok += 1;
              okPerWorker[index]! += 1;
              if (sigtermSent) outcomes.okAfterSigterm += 1;
            } else if (response.statusCode === 503) outcomes.unavailable += 1;
            else outcomes.failures.push(`status ${response.statusCode}`);
          } catch (err) {
            const { code, message } = err as { code?: string; message: string };
            outcomes.failures.push(`${code ?? ''} ${message}`);
            return;
          }
        }
      } finally {
        await client.destroy();
      }
    }

    const workers = Array.from({ length: WORKERS }, worker);
    let readiness: number | undefined;
    let exitCode: number | null | undefined;
    try {
      // The signal comes once every connection carries load, however long that takes (a
      // failure ends the wait too: the assertions below show it).
      await waitFor(
        async () =>
          okPerWorker.every((n) => n >= 3) || outcomes.failures.length > 0 ? true : undefined,
        { timeoutMs: GATEWAY_ANSWER_MS, intervalMs: 20, what: 'every worker to have 3 answers' },
      );
      const exit = gateway.stop('SIGTERM');
      sigtermSent = true;
      // Only a 503 seen while the gateway still listens ends this: once it has closed, every
      // probe is refused until the deadline.
      readiness = await waitFor(
        async () => ((await fetch(`${gateway.url}/readyz`)).status === 503 ? 503 : undefined),
        { timeoutMs: within(SHUTDOWN_DELAY_MS), intervalMs: 20, what: 'readiness to fail' },
      );
      endpointRemoved = true;
      exitCode = await exit;
    } finally {
      stop = true;
      await Promise.all(workers);
      await gateway.stop('SIGKILL');
      await catalog.stop();
    }

    expect(readiness).toBe(503);
    expect(exitCode).toBe(0);
    expect(outcomes.failures).toEqual([]);
    expect(outcomes.okAfterSigterm).toBeGreaterThan(0);
    expect(gateway.output.some((l) => l.includes('shutdown complete'))).toBe(true);
  });
});
