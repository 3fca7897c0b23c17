import { Webhook } from 'standardwebhooks';
import { CatalogConfigSchema } from '../../services/catalog/src/config';
import { dataset, newTool } from '../support/catalog';
import { waitFor } from '../support/ports';
import { RedisServer } from '../support/redis-server';
import {
  CATALOG_CLI,
  ServiceProcess,
  importFile,
  keysCli,
  runCli,
  tempDataDir,
} from '../support/services';
import { PROPAGATION_MS, deliveryLeaseMs, within } from '../support/waits';
import { type Receiver, startReceiver } from '../support/webhook-receiver';

/** The catalog's webhook retry schedule here: RETRIES retries, RETRY_MS apart (±10 %). */
const RETRIES = 3;
const RETRY_MS = 300;
/** The retry schedule of the crash test: a retry pending long enough to kill the catalog first. */
const CRASH_RETRY_MS = 3_000;
/** The catalog's attempt time limit here: WEBHOOK_TIMEOUT_MS's default. */
const WEBHOOK_TIMEOUT_MS = CatalogConfigSchema.properties.WEBHOOK_TIMEOUT_MS.default as number;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Enterprise webhooks end to end (docs/api.md#enterprise-export-and-webhooks,
 * docs/api.md#webhook-events-and-deliveries) through the real gateway and catalog processes, on
 * both queue backends: SQLite under DATA_DIR, and BullMQ on a real Redis.
 */
describe.each([
  ['the embedded queue', false],
  ['BullMQ on Redis', true],
])('webhooks through the running stack, on %s', (_name, withRedis) => {
  let redis: RedisServer | undefined;
  let catalog: ServiceProcess;
  let gateway: ServiceProcess;
  let receiver: Receiver;
  let answers: number[] = [];
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };
  const catalogEnv = {
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_SCHEDULE: Array(RETRIES).fill(`${RETRY_MS}ms`).join(','),
  };
  const keys: Record<'free' | 'pro' | 'enterprise' | 'other', string> = {
    free: '',
    pro: '',
    enterprise: '',
    other: '',
  };

  beforeAll(async () => {
    if (withRedis) {
      redis = await RedisServer.start();
      env.REDIS_URL = redis.url;
    }
    receiver = await startReceiver(() => ({ status: answers.shift() ?? 200 }));
    catalog = await ServiceProcess.start('catalog', { ...env, ...catalogEnv });
    gateway = await ServiceProcess.start('gateway', { ...env, CATALOG_URL: catalog.url });
    for (const [name, tier] of [
      ['free', 'free'],
      ['pro', 'pro'],
      ['enterprise', 'enterprise'],
      ['other', 'enterprise'],
    ] as const) {
      const created = (await keysCli(
        ['create', '--tier', tier, '--email', `${name}@hooks.example`, '--name', name],
        env,
      )) as { apiKey: string };
      keys[name] = created.apiKey;
    }
  });
  afterAll(async () => {
    await Promise.all([gateway.stop(), catalog.stop()]);
    await receiver.close();
    await redis?.stop();
  });

  const call = async (
    method: string,
    url: string,
    key: keyof typeof keys,
    body?: unknown,
  ): Promise<{ status: number; body: Json }> => {
    const response = await fetch(`${gateway.url}${url}`, {
      method,
      headers: {
        'x-api-key': keys[key],
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as Json) : {} };
  };

  let subscription: Json;
  const verified = (index: number) =>
    new Webhook(subscription.secret).verify(receiver.requests[index]!.body, {
      'webhook-id': receiver.requests[index]!.headers['webhook-id'] as string,
      'webhook-timestamp': receiver.requests[index]!.headers['webhook-timestamp'] as string,
      'webhook-signature': receiver.requests[index]!.headers['webhook-signature'] as string,
    }) as Json;
  const waitForRequests = (count: number) =>
    waitFor(async () => (receiver.requests.length >= count ? true : undefined), {
      // Dispatched within a second (the outbox's poll, if not announced), then each retry.
      timeoutMs: within(PROPAGATION_MS + RETRIES * 1.1 * RETRY_MS),
      what: `${count} deliveries`,
    });

  test('Free and Pro get 403 on every webhook route, even with a bad body', async () => {
    for (const tier of ['free', 'pro'] as const) {
      expect((await call('POST', '/v1/webhooks', tier, { url: 5 })).status).toBe(403);
      expect((await call('GET', '/v1/webhooks', tier)).status).toBe(403);
      expect((await call('DELETE', '/v1/webhooks/wh_x', tier)).status).toBe(403);
    }
  });

  test('subscribe: 201 with the secret, shown once; another key sees a 404', async () => {
    const created = await call('POST', '/v1/webhooks', 'enterprise', {
      url: receiver.url,
      events: ['tool.created', 'tool.updated', 'tool.deleted'],
      description: 'mirror',
    });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    subscription = created.body;
    const listed = await call('GET', '/v1/webhooks', 'enterprise');
    expect(JSON.stringify(listed.body)).not.toContain(subscription.secret);
    expect((await call('GET', `/v1/webhooks/${subscription.id}`, 'other')).status).toBe(404);
    expect((await call('DELETE', `/v1/webhooks/${subscription.id}`, 'other')).status).toBe(404);
  });

  test('a CLI import, update and delete each deliver one signed event with its documented body', async () => {
    expect((await runCli(CATALOG_CLI, ['import', importFile([newTool()])], env)).code).toBe(0);
    await waitForRequests(1);
    const created = verified(0);
    // The full record, as the API serves it, updatedAt included: the write's time, or (after a
    // large write) a few milliseconds on.
    expect(created).toEqual({
      type: 'tool.created',
      timestamp: created.timestamp,
      data: { ...newTool(), updatedAt: expect.any(String) },
    });
    expect(new Date(created.timestamp).toISOString()).toBe(created.timestamp);
    const lag = (event: Json) => Date.parse(event.data.updatedAt) - Date.parse(event.timestamp);
    expect(lag(created)).toBeGreaterThanOrEqual(0);
    // The write's time, moved on only as far as the change clock needs to stay ahead of every
    // earlier change: within the second every replica serves a change in.
    expect(lag(created)).toBeLessThan(PROPAGATION_MS);

    const update = importFile([newTool({ pricing: 'Hooked pricing' })]);
    expect((await runCli(CATALOG_CLI, ['import', update], env)).code).toBe(0);
    await waitForRequests(2);
    const updated = verified(1);
    expect(updated).toMatchObject({
      type: 'tool.updated',
      data: { slug: 'zephyr-notes', pricing: 'Hooked pricing', changedFields: ['pricing'] },
    });
    expect(lag(updated)).toBeGreaterThanOrEqual(0);
    expect(updated.data.updatedAt > created.data.updatedAt).toBe(true);
    const served = await call('GET', '/v1/tools/zephyr-notes', 'enterprise');
    expect(served.body.data.updatedAt).toBe(updated.data.updatedAt);

    expect((await runCli(CATALOG_CLI, ['delete', 'zephyr-notes'], env)).code).toBe(0);
    await waitForRequests(3);
    expect(verified(2)).toEqual(
      expect.objectContaining({
        type: 'tool.deleted',
        data: { slug: 'zephyr-notes', name: 'Zephyr Notes' },
      }),
    );
    const ids = receiver.requests.map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(3);
  });

  test('/test delivers a ping', async () => {
    const before = receiver.requests.length;
    const queued = await call('POST', `/v1/webhooks/${subscription.id}/test`, 'enterprise');
    expect(queued.status).toBe(202);
    await waitForRequests(before + 1);
    expect(verified(before)).toMatchObject({ type: 'ping', data: { webhookId: subscription.id } });
  });

  test('a receiver answering 500 twice gets the event on the third attempt, same webhook-id', async () => {
    const before = receiver.requests.length;
    answers = [500, 500];
    const changed = { ...dataset.tools[3]!, pricing: 'Retried pricing' };
    expect((await runCli(CATALOG_CLI, ['import', importFile([changed])], env)).code).toBe(0);
    await waitForRequests(before + 3);
    const ids = receiver.requests.slice(before).map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(1);
    const deliveries = await call(
      'GET',
      `/v1/webhooks/${subscription.id}/deliveries`,
      'enterprise',
    );
    expect(deliveries.status).toBe(200);
    const attempts = (deliveries.body.data as Json[]).filter((a) => a.eventId === ids[0]);
    expect(attempts.map((a) => a.attempt).sort()).toEqual([1, 2, 3]);
    expect(attempts.find((a) => a.attempt === 3)).toMatchObject({
      outcome: 'delivered',
      statusCode: 200,
    });
  });

  test('an 11th subscription is a 400', async () => {
    for (let i = 0; i < 9; i++) {
      const made = await call('POST', '/v1/webhooks', 'enterprise', {
        url: `${receiver.url}/${i}`,
        events: ['quota.warning'],
      });
      expect(made.status).toBe(201);
    }
    const eleventh = await call('POST', '/v1/webhooks', 'enterprise', {
      url: receiver.url,
      events: ['tool.created'],
    });
    expect(eleventh.status).toBe(400);
  });

  test('the catalog killed with SIGKILL while a retry is pending delivers it after restart', async () => {
    await catalog.stop();
    catalog = await ServiceProcess.start('catalog', {
      ...env,
      ...catalogEnv,
      WEBHOOK_RETRY_SCHEDULE: `${CRASH_RETRY_MS}ms`,
      CATALOG_PORT: String(catalog.port),
    });
    const before = receiver.requests.length;
    answers = [503];
    const changed = { ...dataset.tools[4]!, pricing: 'After a crash' };
    expect((await runCli(CATALOG_CLI, ['import', importFile([changed])], env)).code).toBe(0);
    await waitForRequests(before + 1);
    await catalog.stop('SIGKILL');
    catalog = await ServiceProcess.start('catalog', {
      ...env,
      ...catalogEnv,
      CATALOG_PORT: String(catalog.port),
    });
    // Killed mid-attempt, the delivery is taken up again when its lease runs out, then retried.
    await waitFor(async () => (receiver.requests.length >= before + 2 ? true : undefined), {
      timeoutMs: within(deliveryLeaseMs(WEBHOOK_TIMEOUT_MS) + 1.1 * CRASH_RETRY_MS),
      what: 'the retry after the restart',
    });
    const ids = receiver.requests.slice(before).map((r) => r.headers['webhook-id']);
    expect(ids[0]).toBe(ids[1]);
    expect((JSON.parse(receiver.requests[before + 1]!.body) as Json).data.pricing).toBe(
      'After a crash',
    );
  }, 150_000);
});
