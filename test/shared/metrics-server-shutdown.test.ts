import { connect } from 'node:net';
import { ServiceProcess, tempDataDir } from '../support/services';
import { SHUTDOWN_GRACE_MS } from '../support/waits';

/**
 * Prometheus keeps its scrape connection alive and scrapes again within its interval, so a
 * scrape may be in flight on the metrics port whenever a service shuts down. The service must
 * still close its metrics server and exit 0 within its grace, not wait for that connection.
 */
test(
  'a scrape in flight on the metrics port does not hold a service past its grace',
  async () => {
    const catalog = await ServiceProcess.start('catalog', { DATA_DIR: tempDataDir() });
    // A request whose body keeps coming, a byte at a time: the connection is busy, never idle
    // and never silent, until the server drops it.
    const scrape = connect(catalog.metricsPort, '127.0.0.1');
    await new Promise((resolve) => scrape.once('connect', resolve));
    scrape.write('GET /metrics HTTP/1.1\r\nHost: prometheus\r\nContent-Length: 100000\r\n\r\n');
    const trickle = setInterval(() => scrape.write('x'), 200);
    const dropped = new Promise((resolve) => scrape.once('close', resolve));
    scrape.on('error', () => undefined);
    // Read whatever comes, so the server's close is seen ('close' follows 'end' only once read).
    scrape.resume();
    try {
      const signalled = Date.now();
      const code = await catalog.stop('SIGTERM');
      expect(code).toBe(0);
      expect(Date.now() - signalled).toBeLessThan(SHUTDOWN_GRACE_MS);
      await dropped;
    } finally {
      clearInterval(trickle);
      scrape.destroy();
    }
  },
  2 * SHUTDOWN_GRACE_MS,
);
