import { type Socket, connect } from 'node:net';
import { SERVER_TIMEOUTS } from '../../../services/shared/http-server';
import { waitFor } from '../../support/ports';
import { ServiceProcess, keyedGet, registerKey, tempDataDir } from '../../support/services';
import { SERVICE_START_MS, within } from '../../support/waits';

/**
 * How late past the header timeout a silent connection may still be open: until the next look at
 * silent connections (services/shared/connection-guard.ts looks once a second, as Node checks its
 * own timeouts), late by a busy machine; still short of the request timeout.
 */
const SLACK_MS = within(SERVER_TIMEOUTS.connectionsCheckingInterval);
// Two services started in turn; the connections' wait, then the service again.
jest.setTimeout(
  Math.max(2 * SERVICE_START_MS, SERVER_TIMEOUTS.headersTimeout + SLACK_MS + within(0)),
);
const OPEN_FILES_LIMIT = 256;
const SILENT = 300;

/** Opens a connection that never sends a byte; resolves once connected or refused. */
function silentConnection(port: number) {
  return new Promise<{ socket: Socket; closed: Promise<number> }>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    const closed = new Promise<number>((done) => socket.once('close', () => done(Date.now())));
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('close', () => resolve({ socket, closed }));
  });
}

/**
 * Connections that connect and never send a byte are closed once the header timeout has passed,
 * so they cannot hold a process's file descriptors for ever: a gateway under a low `ulimit -n`
 * flooded with more of them than it has descriptors says so in its log, and serves again once
 * they are gone, without a restart.
 */
describe('connections that never send a byte', () => {
  let catalog: ServiceProcess;
  let gateway: ServiceProcess;
  let key: string;

  beforeAll(async () => {
    catalog = await ServiceProcess.start('catalog', {});
    gateway = await ServiceProcess.start(
      'gateway',
      { CATALOG_URL: catalog.url, DATA_DIR: tempDataDir(), REGISTRATIONS_PER_HOUR: '100' },
      { openFilesLimit: OPEN_FILES_LIMIT },
    );
    key = await registerKey(gateway.url);
  });

  afterAll(async () => {
    await Promise.all([gateway.stop(), catalog.stop()]);
  });

  test(`${SILENT} silent connections against ${OPEN_FILES_LIMIT} descriptors: closed after the header timeout, then served again`, async () => {
    const openedAt = Date.now();
    const connections = await Promise.all(
      Array.from({ length: SILENT }, () => silentConnection(gateway.port)),
    );
    const closedAt = await Promise.all(connections.map((c) => c.closed));
    // Each one closed by the gateway (the test closes none), none long after the timeout.
    expect(Math.max(...closedAt) - openedAt).toBeLessThan(
      SERVER_TIMEOUTS.headersTimeout + SLACK_MS,
    );
    expect(gateway.output.join('\n')).toContain('file descriptors nearly exhausted');

    await waitFor(async () =>
      (await keyedGet(gateway.url, key, '/v1/categories')).status === 200 ? true : undefined,
    );
    const metrics = await gateway.metrics();
    const closedSilent = Number(
      metrics.match(/^http_silent_connections_closed_total\{[^}]*\} (\d+)/m)?.[1],
    );
    // Counted: every connection the gateway accepted and then closed at the timeout, by its own
    // guard or by Node's 408 alike. Those past the descriptor limit were closed as soon as they
    // were accepted (libuv's answer to EMFILE), never having waited.
    const closedAtTimeout = closedAt.filter(
      (at) => at - openedAt >= SERVER_TIMEOUTS.headersTimeout / 2,
    ).length;
    expect(closedAtTimeout).toBeGreaterThan(OPEN_FILES_LIMIT / 2);
    expect(closedSilent).toBe(closedAtTimeout);
  });

  test('a connection that sends its request late, but within the timeout, is served', async () => {
    const socket = connect(gateway.port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    await new Promise((resolve) => socket.once('connect', resolve));
    await new Promise((resolve) => setTimeout(resolve, SERVER_TIMEOUTS.headersTimeout / 2));
    socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    await new Promise((resolve) => socket.once('close', resolve));
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });
});
