import { freePort, waitFor } from '../support/ports';
import { ServiceProcess, keyedGet, registerKey, tempDataDir } from '../support/services';

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

  const readiness = async () => {
    const response = await fetch(`${gateway.url}/readyz`);
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  };

  test('before its catalog answers: 503, saying why without an address', async () => {
    const { status, body } = await readiness();
    expect(status).toBe(503);
    expect(body).toEqual({ status: 'unavailable', reason: 'the catalog cannot be reached yet' });
    expect(JSON.stringify(body)).not.toContain(String(catalogPort));
  });

  test('ready as soon as the catalog is, and the first request then succeeds', async () => {
    catalog = await ServiceProcess.start('catalog', { CATALOG_PORT: String(catalogPort) });
    await waitFor(async () => ((await readiness()).status === 200 ? true : undefined));
    const key = await registerKey(gateway.url);
    expect((await keyedGet(gateway.url, key, '/v1/categories')).status).toBe(200);
  });

  test('a catalog outage afterwards: still ready, catalog routes answer JSON 503', async () => {
    await catalog!.stop();
    const key = await registerKey(gateway.url);
    const response = await keyedGet(gateway.url, key, '/v1/categories');
    expect([502, 503]).toContain(response.status);
    expect(Object.keys(response.body)).toEqual(['error']);
    expect((await readiness()).status).toBe(200);
  });
});
