import { createServer, type Server, type Socket } from 'node:net';
import { CATALOG_CHECK_TIMINGS } from '../../../services/gateway/src/proxy/catalog-readiness';
import { freePort, waitFor } from '../../support/ports';
import {
  INTERNAL_TOKEN,
  ServiceProcess,
  keyedGet,
  registerKey,
  startStack,
  tempDataDir,
} from '../../support/services';

/**
 * The chart's readiness probe gives up after 2 s (probes.readiness.timeoutSeconds). The gateway
 * answers /readyz from the state of its background checks, at once (≤ 50 ms) whatever the catalog
 * does; 1 s leaves a busy test machine a wide margin and stays well under the probe's limit.
 */
const READYZ_BOUND_MS = 1_000;
/** A check's outcome shows in /readyz within one period and the check's own timeout, plus slack. */
const untilReadyNoticed = CATALOG_CHECK_TIMINGS.untilReadyMs + CATALOG_CHECK_TIMINGS.timeoutMs;
const whenReadyNoticed = CATALOG_CHECK_TIMINGS.whenReadyMs + CATALOG_CHECK_TIMINGS.timeoutMs;
const SLACK_MS = 3_000;

const REFUSED = "the catalog refuses this gateway's INTERNAL_TOKEN";
const OTHER_TOKEN = 'a-token-the-gateway-was-never-given';

async function readiness(gateway: ServiceProcess) {
  const started = performance.now();
  const response = await fetch(`${gateway.url}/readyz`);
  const body = (await response.json()) as Record<string, string>;
  return { status: response.status, body, ms: performance.now() - started };
}

function gatewayLines(gateway: ServiceProcess): { level?: string; msg?: string }[] {
  return gateway.output.flatMap((line) => {
    try {
      return [JSON.parse(line) as { level?: string; msg?: string }];
    } catch {
      return [];
    }
  });
}

/** The value of an unlabelled-but-`service` gauge in a Prometheus text page. */
function gauge(page: string, name: string): number {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(page);
  return match ? Number(match[1]) : NaN;
}

const tokenErrors = (gateway: ServiceProcess) =>
  gatewayLines(gateway).filter((l) => l.level === 'error' && l.msg?.includes('INTERNAL_TOKEN'));

/**
 * The gateway's /readyz means "a request now succeeds": not ready before its catalog has been
 * ready, so no load balancer (nor `npm start`) sends it a request that would spend a unit on a
 * 503. Once the catalog has been ready, a catalog outage leaves the gateway ready, answering the
 * API's JSON 503 rather than the load balancer's page. The reasons name no internal address.
 */
describe('gateway readiness follows its catalog', () => {
  let catalogPort: number;
  let gateway: ServiceProcess;
  let catalog: ServiceProcess | undefined;

  beforeAll(async () => {
    catalogPort = await freePort();
    gateway = await ServiceProcess.start(
      'gateway',
      {
        CATALOG_URL: `http://127.0.0.1:${catalogPort}`,
        DATA_DIR: tempDataDir(),
        REGISTRATIONS_PER_HOUR: '100',
      },
      { waitReady: false },
    );
  });

  afterAll(async () => {
    await Promise.all([gateway.stop(), catalog?.stop()]);
  });

  test('before its catalog answers: 503, saying why without an address', async () => {
    const { status, body } = await readiness(gateway);
    expect(status).toBe(503);
    expect(body).toEqual({ status: 'unavailable', reason: 'the catalog cannot be reached yet' });
    expect(JSON.stringify(body)).not.toContain(String(catalogPort));
  });

  test('ready as soon as the catalog is, and the first request then succeeds', async () => {
    catalog = await ServiceProcess.start('catalog', { CATALOG_PORT: String(catalogPort) });
    await waitFor(async () => ((await readiness(gateway)).status === 200 ? true : undefined), {
      timeoutMs: untilReadyNoticed + SLACK_MS,
    });
    const key = await registerKey(gateway.url);
    expect((await keyedGet(gateway.url, key, '/v1/categories')).status).toBe(200);
  });

  test('a catalog outage afterwards: still ready, catalog routes answer JSON 503', async () => {
    await catalog!.stop();
    const key = await registerKey(gateway.url);
    const response = await keyedGet(gateway.url, key, '/v1/categories');
    expect([502, 503]).toContain(response.status);
    expect(Object.keys(response.body)).toEqual(['error']);
    expect((await readiness(gateway)).status).toBe(200);
  });
});

/**
 * Once ready, a catalog that goes away leaves the gateway ready even after its checks have seen it
 * gone: it still serves usage, registration and the portal, and JSON 503s on catalog routes.
 */
describe('a ready gateway whose catalog goes away', () => {
  let stack: Awaited<ReturnType<typeof startStack>>;

  beforeAll(async () => {
    stack = await startStack();
  });

  afterAll(async () => {
    await stack.stop();
  });

  test('stays ready after a check found the catalog unreachable', async () => {
    const { gateway, catalog } = stack;
    const key = await registerKey(gateway.url);
    await catalog.stop();
    // The catalog was up since the gateway started: the first failed check is this one.
    await waitFor(
      async () =>
        gatewayLines(gateway).some((l) => l.msg?.includes('whether it is ready failed'))
          ? true
          : undefined,
      { timeoutMs: whenReadyNoticed + SLACK_MS, what: 'a failed readiness check' },
    );
    const { status, body, ms } = await readiness(gateway);
    expect({ status, body }).toEqual({ status: 200, body: { status: 'ready' } });
    expect(ms).toBeLessThan(READYZ_BOUND_MS);
    expect((await keyedGet(gateway.url, key, '/v1/usage')).status).toBe(200);
    expect([502, 503]).toContain((await keyedGet(gateway.url, key, '/v1/categories')).status);
  }, 30_000);
});

/**
 * A gateway and a catalog set to different INTERNAL_TOKENs: the catalog answers every keyed
 * request 401 ("This service only answers requests that come through the gateway"). Such a
 * gateway is not ready, says why in one error line (never the token) and in a gauge, and becomes
 * ready once the catalog takes its token. A token rotated on one side only later makes it unready
 * again: every keyed request would fail, unlike during a catalog outage.
 */
describe('a catalog that refuses the gateway token', () => {
  let catalogPort: number;
  let gateway: ServiceProcess;
  let catalog: ServiceProcess | undefined;

  const startCatalog = async (token: string) => {
    catalog = await ServiceProcess.start('catalog', {
      CATALOG_PORT: String(catalogPort),
      INTERNAL_TOKEN: token,
    });
  };

  beforeAll(async () => {
    catalogPort = await freePort();
    await startCatalog(OTHER_TOKEN);
    gateway = await ServiceProcess.start(
      'gateway',
      { CATALOG_URL: `http://127.0.0.1:${catalogPort}`, DATA_DIR: tempDataDir() },
      { waitReady: false },
    );
  });

  afterAll(async () => {
    await Promise.all([gateway.stop(), catalog?.stop()]);
  });

  test('not ready, saying so once in the log and in a gauge, never with the token', async () => {
    const answer = await waitFor(
      async () => {
        const got = await readiness(gateway);
        return got.body.reason === REFUSED ? got : undefined;
      },
      { timeoutMs: untilReadyNoticed + SLACK_MS, what: 'the refused token in /readyz' },
    );
    expect(answer.status).toBe(503);
    expect(answer.body).toEqual({ status: 'unavailable', reason: REFUSED });
    expect(gauge(await gateway.metrics(), 'gateway_internal_token_refused')).toBe(1);

    // Several more checks: still not ready, and still one error line.
    await new Promise((r) => setTimeout(r, 3 * CATALOG_CHECK_TIMINGS.untilReadyMs));
    expect((await readiness(gateway)).status).toBe(503);
    expect(tokenErrors(gateway)).toHaveLength(1);
    const output = gateway.output.join('\n');
    expect(output).not.toContain(INTERNAL_TOKEN);
    expect(output).not.toContain(OTHER_TOKEN);
  }, 30_000);

  test('ready once the catalog takes the token; the gauge goes back to 0', async () => {
    await catalog!.stop();
    await startCatalog(INTERNAL_TOKEN);
    await waitFor(async () => ((await readiness(gateway)).status === 200 ? true : undefined), {
      timeoutMs: untilReadyNoticed + SLACK_MS,
      what: 'the gateway ready',
    });
    expect(gauge(await gateway.metrics(), 'gateway_internal_token_refused')).toBe(0);
  }, 30_000);

  test('a token rotated on one side after being ready: not ready again', async () => {
    await catalog!.stop();
    await startCatalog(OTHER_TOKEN);
    const answer = await waitFor(
      async () => {
        const got = await readiness(gateway);
        return got.status === 503 ? got : undefined;
      },
      { timeoutMs: whenReadyNoticed + SLACK_MS, what: 'the gateway unready' },
    );
    expect(answer.body).toEqual({ status: 'unavailable', reason: REFUSED });
    expect(gauge(await gateway.metrics(), 'gateway_internal_token_refused')).toBe(1);
    expect(tokenErrors(gateway)).toHaveLength(2);
  }, 30_000);
});

/**
 * A catalog that accepts connections and never answers (a hung process, a stuck proxy): /readyz
 * still answers at once, not after the catalog call's UPSTREAM_TIMEOUT_MS (5 s), which the chart's
 * probe (2 s) would have counted as a failure whatever the answer.
 */
describe('a hung catalog', () => {
  let server: Server;
  const sockets = new Set<Socket>();
  let gateway: ServiceProcess;

  beforeAll(async () => {
    const port = await freePort();
    server = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    gateway = await ServiceProcess.start(
      'gateway',
      { CATALOG_URL: `http://127.0.0.1:${port}`, DATA_DIR: tempDataDir() },
      { waitReady: false },
    );
  });

  afterAll(async () => {
    await gateway.stop();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  test('/readyz answers 503 at once, while checks hang and after they time out', async () => {
    // Past a check's own timeout, twice: answers while a check waits and after it gave up.
    const until = Date.now() + 2 * CATALOG_CHECK_TIMINGS.timeoutMs + 500;
    const answers: Awaited<ReturnType<typeof readiness>>[] = [];
    do {
      answers.push(await readiness(gateway));
      await new Promise((r) => setTimeout(r, 100));
    } while (Date.now() < until);
    expect(sockets.size).toBeGreaterThan(0);
    for (const { status, body } of answers) {
      expect({ status, body }).toEqual({
        status: 503,
        body: { status: 'unavailable', reason: 'the catalog cannot be reached yet' },
      });
    }
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(READYZ_BOUND_MS);
  }, 30_000);
});
