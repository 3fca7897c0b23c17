import Fastify from 'fastify';
import { Client } from 'undici';
import { healthPlugin } from '../../services/shared/health';
import { baseFastifyOptions, drain } from '../../services/shared/http-server';
import { waitFor } from '../support/ports';

/**
 * The shutdown sequence as a keep-alive client sees it: every answer from SIGTERM on closes its
 * connection, before the listener closes and after; idle connections are closed when the listener
 * is, a connection with a request in flight only once its answer has gone.
 */
test('drain: Connection: close throughout, idle connections closed, in-flight ones answered', async () => {
  const app = Fastify(baseFastifyOptions());
  await app.register(healthPlugin, { ready: async () => undefined });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let arrived!: () => void;
  const slowArrived = new Promise<void>((resolve) => (arrived = resolve));
  app.get('/slow', async () => {
    arrived();
    await released;
    return { ok: true };
  });
  app.get('/fast', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const open = (client: Client) => {
    const state = { connected: false };
    client.on('connect', () => (state.connected = true));
    client.on('disconnect', () => (state.connected = false));
    return state;
  };
  const [idle, busy, late] = [0, 1, 2].map(() => new Client(url, { keepAliveTimeout: 60_000 }));
  const idleState = open(idle!);
  const busyState = open(busy!);
  try {
    const before = await idle!.request({ path: '/fast', method: 'GET' });
    await before.body.text();
    expect(before.headers.connection).toBe('keep-alive');
    expect(idleState.connected).toBe(true);

    const slow = busy!.request({ path: '/slow', method: 'GET' });
    // Should an assertion below fail, the cleanup rejects it: not a second failure.
    slow.catch(() => undefined);
    await slowArrived;
    const drained = drain(app, 500);

    // The listener is still open: answered, and told to go elsewhere next time.
    const during = await late!.request({ path: '/fast', method: 'GET' });
    await during.body.text();
    expect([during.statusCode, during.headers.connection]).toEqual([200, 'close']);
    const readiness = await late!.request({ path: '/readyz', method: 'GET' });
    expect(readiness.statusCode).toBe(503);
    await readiness.body.text();

    // The listener closes: the idle connection goes, the one with a request in flight stays.
    await waitFor(async () => (idleState.connected ? undefined : true), {
      what: 'the idle connection to close',
    });
    expect(busyState.connected).toBe(true);

    release();
    const answer = await slow;
    expect(await answer.body.json()).toEqual({ ok: true });
    expect([answer.statusCode, answer.headers.connection]).toEqual([200, 'close']);
    // The server's close waits for every connection: the answered one closed after its answer.
    await drained;
    await waitFor(async () => (busyState.connected ? undefined : true), {
      what: 'the answered connection to close',
    });
  } finally {
    await Promise.all([idle, busy, late].map((client) => client!.destroy()));
    await app.close();
  }
});
