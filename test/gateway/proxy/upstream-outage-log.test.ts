import { Pool } from 'undici';
import { freePort, waitFor } from '../../support/ports';
import { ServiceProcess, registerKey, tempDataDir } from '../../support/services';

/**
 * With the catalog down every proxied request fails the same way: the metric counts each one,
 * the log says so once per window instead of once per request.
 */
describe('catalog down under load', () => {
  test('200 failed requests: every one counted, a couple of warn lines at most', async () => {
    // Nothing listens there: every catalog call is refused, and the gateway is never ready.
    const gateway = await ServiceProcess.start(
      'gateway',
      {
        CATALOG_URL: `http://127.0.0.1:${await freePort()}`,
        DATA_DIR: tempDataDir(),
        QUOTA_FREE: '1000000',
      },
      { waitReady: false },
    );
    const pool = new Pool(gateway.url, { connections: 20 });
    try {
      const key = await registerKey(gateway.url);
      const statuses = await Promise.all(
        Array.from({ length: 200 }, async () => {
          const response = await pool.request({
            path: '/v1/tools?limit=5',
            method: 'GET',
            headers: { 'x-api-key': key },
          });
          await response.body.arrayBuffer();
          return response.statusCode;
        }),
      );
      expect(statuses).toEqual(Array(200).fill(503));

      const counted = await gateway.metrics();
      expect(counted).toMatch(/^gateway_upstream_errors_total\{kind="unavailable"[^}]*\} 200$/m);
      // The logger writes asynchronously: wait for the 200 access lines before counting.
      const lines = await waitFor(
        async () => {
          const parsed = gateway.output.flatMap((line) => {
            try {
              return [JSON.parse(line) as { level: string; msg: string; status?: number }];
            } catch {
              return [];
            }
          });
          return parsed.filter((l) => l.msg === 'request completed' && l.status === 503).length ===
            200
            ? parsed
            : undefined;
        },
        { what: '200 access log lines' },
      );
      const warnings = lines.filter((l) => l.level === 'warn' && l.msg === 'catalog call failed');
      expect(warnings.length).toBeGreaterThanOrEqual(1);
      expect(warnings.length).toBeLessThanOrEqual(2);
    } finally {
      await pool.close();
      await gateway.stop();
    }
  });
});
