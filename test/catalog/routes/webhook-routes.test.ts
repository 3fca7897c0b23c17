import type { FastifyInstance } from 'fastify';
import { buildCatalogApp } from '../../../services/catalog/src/app';
import { EmbeddedSubscriptionStore } from '../../../services/catalog/src/webhooks/embedded-subscription-store';
import type { Resolver } from '../../../services/catalog/src/webhooks/ssrf-guard';
import type {
  DeliveryAttempt,
  DeliveryQueue,
  Subscription,
  WebhookEvent,
} from '../../../services/catalog/src/webhooks/webhook-types';
import { INTERNAL_HEADERS } from '../../../services/shared/contract';
import { type Tier } from '../../../services/shared/tiers';
import { TEST_INTERNAL_TOKEN, asTier, dataset, embeddedStore } from '../../support/catalog';
import { tempDataDir } from '../../support/services';

/**
 * The delivery queue as the routes use it; the real queues are tested on their own. It records
 * what was enqueued and answers `attempts` with what a test put there.
 */
class RecordingQueue implements DeliveryQueue {
  readonly enqueued: Array<{ subscription: Subscription; event: WebhookEvent }> = [];
  readonly asked: Array<[string, number]> = [];
  attemptsToReturn: DeliveryAttempt[] = [];

  async enqueue(subscription: Subscription, event: WebhookEvent): Promise<void> {
    this.enqueued.push({ subscription, event });
  }
  async attempts(subscriptionId: string, limit: number): Promise<DeliveryAttempt[]> {
    this.asked.push([subscriptionId, limit]);
    return this.attemptsToReturn;
  }
  async backlog() {
    return { pending: 0, oldestPendingSeconds: 0 };
  }
  async close(): Promise<void> {}
}

const resolve: Resolver = async (hostname) => {
  const names: Record<string, string[]> = {
    'hooks.example.com': ['93.184.215.14'],
    'internal.example.com': ['10.0.0.1'],
    'split.example.com': ['93.184.215.14', '169.254.169.254'],
  };
  const addresses = names[hostname];
  if (!addresses) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return addresses;
};

const ENTERPRISE = asTier('enterprise');
const OTHER_ENTERPRISE = { ...ENTERPRISE, [INTERNAL_HEADERS.keyId]: 'key-other' };
const VALID = { url: 'https://hooks.example.com/in', events: ['tool.created', 'tool.deleted'] };

async function webhookApp(allowPrivate = false) {
  const subscriptions = new EmbeddedSubscriptionStore(tempDataDir());
  const queue = new RecordingQueue();
  const app = await buildCatalogApp({
    store: embeddedStore(),
    meta: dataset.meta,
    internalToken: TEST_INTERNAL_TOKEN,
    logger: false,
    webhooks: { subscriptions, queue, allowPrivate, resolve },
  });
  return { app, subscriptions, queue };
}

describe('the webhook endpoints', () => {
  let app: FastifyInstance;
  let subscriptions: EmbeddedSubscriptionStore;
  let queue: RecordingQueue;

  beforeEach(async () => {
    ({ app, subscriptions, queue } = await webhookApp());
  });
  afterEach(async () => {
    await app.close();
    await subscriptions.close();
  });

  const create = (body: unknown, headers: Record<string, string> = ENTERPRISE) =>
    app.inject({ method: 'POST', url: '/v1/webhooks', headers, payload: body as object });

  test('POST /webhooks answers 201 with the subscription and a whsec_ secret', async () => {
    const response = await create({ ...VALID, description: 'CI' });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(
      ['createdAt', 'description', 'events', 'id', 'secret', 'url'].sort(),
    );
    expect(body).toMatchObject({
      url: 'https://hooks.example.com/in',
      events: ['tool.created', 'tool.deleted'],
      description: 'CI',
    });
    expect(body.id).toMatch(/^wh_[0-9a-f]{32}$/);
    expect(Date.parse(body.createdAt)).not.toBeNaN();
    expect(body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(body.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);

    const second = (await create(VALID)).json();
    expect(second.secret).not.toBe(body.secret);
    expect(second.id).not.toBe(body.id);
    expect(second.description).toBeNull();
  });

  test('a description is kept in NFC and may run over several lines', async () => {
    const response = await create({ ...VALID, description: 'Cafe\u0301 CI\n\tdeploys' });
    expect(response.statusCode).toBe(201);
    expect(response.json().description).toBe('Caf\u00e9 CI\n\tdeploys');
    const [stored] = await subscriptions.list('key-enterprise');
    expect(stored?.description).toBe('Caf\u00e9 CI\n\tdeploys');
  });

  test('a body that is not valid UTF-8 is a 400 saying so; nothing is stored', async () => {
    const json = JSON.stringify({ ...VALID, description: 'CI' });
    const response = await app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: { ...ENTERPRISE, 'content-type': 'application/json' },
      payload: Buffer.concat([
        Buffer.from(json.slice(0, -2)),
        Buffer.from([0xe9]),
        Buffer.from('"}'),
      ]),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: 'The request body is not valid UTF-8' });
    expect(await subscriptions.list('key-enterprise')).toEqual([]);
  });

  test('the secret is never shown again: not in the list, not in the detail', async () => {
    const created = (await create(VALID)).json();
    const list = await app.inject({ url: '/v1/webhooks', headers: ENTERPRISE });
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual({
      data: [
        {
          id: created.id,
          url: created.url,
          events: created.events,
          description: null,
          createdAt: created.createdAt,
          disabledAt: null,
        },
      ],
      meta: { total: 1 },
    });
    const detail = await app.inject({ url: `/v1/webhooks/${created.id}`, headers: ENTERPRISE });
    expect(detail.statusCode).toBe(200);
    expect(detail.json()).toEqual(list.json().data[0]);
    for (const body of [list.body, detail.body]) {
      expect(body).not.toContain('secret');
      expect(body).not.toContain(created.secret.slice('whsec_'.length));
    }
  });

  test.each(['free', 'pro'] as Tier[])(
    'a %s key gets 403 on every webhook route, also with an invalid body',
    async (tier) => {
      const created = (await create(VALID)).json();
      const headers = asTier(tier);
      const calls = [
        { method: 'POST' as const, url: '/v1/webhooks', payload: { events: 'nonsense' } },
        { method: 'POST' as const, url: '/v1/webhooks', payload: {} },
        { method: 'GET' as const, url: '/v1/webhooks' },
        { method: 'GET' as const, url: `/v1/webhooks/${created.id}` },
        { method: 'DELETE' as const, url: `/v1/webhooks/${created.id}` },
        { method: 'POST' as const, url: `/v1/webhooks/${created.id}/test` },
        { method: 'GET' as const, url: `/v1/webhooks/${created.id}/deliveries` },
      ];
      for (const call of calls) {
        const response = await app.inject({ ...call, headers });
        expect([call.method, call.url, response.statusCode]).toEqual([call.method, call.url, 403]);
        expect(response.json()).toEqual({ error: 'This endpoint needs an Enterprise key' });
      }
      expect(queue.enqueued).toEqual([]);
    },
  );

  test('a key downgraded from Enterprise stops matching as soon as it calls', async () => {
    const created = (await create(VALID)).json();
    expect((await subscriptions.matching('tool.created')).map((s) => s.id)).toEqual([created.id]);
    const asPro = { ...asTier('pro'), [INTERNAL_HEADERS.keyId]: 'key-enterprise' };
    expect((await app.inject({ url: '/v1/webhooks', headers: asPro })).statusCode).toBe(403);
    expect(await subscriptions.matching('tool.created')).toEqual([]);
  });

  test("another key's webhook is a 404 on every route, and stays the owner's", async () => {
    const created = (await create(VALID)).json();
    for (const [method, suffix] of [
      ['GET', ''],
      ['DELETE', ''],
      ['POST', '/test'],
      ['GET', '/deliveries'],
    ] as const) {
      const response = await app.inject({
        method,
        url: `/v1/webhooks/${created.id}${suffix}`,
        headers: OTHER_ENTERPRISE,
      });
      expect([method, suffix, response.statusCode]).toEqual([method, suffix, 404]);
      expect(response.json()).toEqual({ error: `Webhook '${created.id}' not found` });
    }
    expect((await app.inject({ url: '/v1/webhooks', headers: OTHER_ENTERPRISE })).json()).toEqual({
      data: [],
      meta: { total: 0 },
    });
    expect(queue.enqueued).toEqual([]);
    expect(queue.asked).toEqual([]);
    const own = await app.inject({ url: `/v1/webhooks/${created.id}`, headers: ENTERPRISE });
    expect(own.statusCode).toBe(200);
  });

  test('DELETE answers 204, after which the webhook is gone', async () => {
    const created = (await create(VALID)).json();
    const url = `/v1/webhooks/${created.id}`;
    const deleted = await app.inject({ method: 'DELETE', url, headers: ENTERPRISE });
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe('');
    expect((await app.inject({ url, headers: ENTERPRISE })).statusCode).toBe(404);
    expect((await app.inject({ method: 'DELETE', url, headers: ENTERPRISE })).statusCode).toBe(404);
    expect((await app.inject({ url: '/v1/webhooks/nope', headers: ENTERPRISE })).json()).toEqual({
      error: "Webhook 'nope' not found",
    });
  });

  test('the 11th subscription of a key is a 400; other keys are not affected', async () => {
    for (let i = 0; i < 10; i += 1) {
      expect((await create({ ...VALID, url: `https://hooks.example.com/${i}` })).statusCode).toBe(
        201,
      );
    }
    const eleventh = await create(VALID);
    expect(eleventh.statusCode).toBe(400);
    expect(eleventh.json()).toEqual({
      error: 'A key may hold at most 10 webhook subscriptions; delete one first',
    });
    expect((await create(VALID, OTHER_ENTERPRISE)).statusCode).toBe(201);
  });

  const EVENTS_ALLOWED =
    'must be a non-empty list of distinct values from tool.created, tool.updated, tool.deleted, quota.warning';

  test.each([
    ['no events', { url: VALID.url }, `Missing required field 'events': ${EVENTS_ALLOWED}`],
    ['an empty list', { ...VALID, events: [] }, `Invalid field 'events': ${EVENTS_ALLOWED}`],
    [
      'an unknown event',
      { ...VALID, events: ['tool.created', 'tool.exploded'] },
      `Invalid field 'events.1': ${EVENTS_ALLOWED}`,
    ],
    [
      'ping, which is sent on demand only',
      { ...VALID, events: ['ping'] },
      `Invalid field 'events.0': ${EVENTS_ALLOWED}`,
    ],
    [
      'a repeated event',
      { ...VALID, events: ['tool.created', 'tool.created'] },
      `Invalid field 'events': ${EVENTS_ALLOWED}`,
    ],
    [
      'one event as a string, never made a list',
      { ...VALID, events: 'tool.created' },
      `Invalid field 'events': ${EVENTS_ALLOWED}`,
    ],
    ['no url', { events: VALID.events }, "Missing required field 'url'"],
    [
      'a numeric description, never made text',
      { ...VALID, description: 7 },
      "Invalid field 'description'",
    ],
    [
      'a description with a right-to-left override',
      { ...VALID, description: 'CI \u202egnp.exe' },
      "Invalid field 'description': must be a string of at most 500 characters, without control characters (but tabs and line breaks), invisible formatting characters (zero-width, bidi, BOM), Unicode line separators or invalid Unicode",
    ],
    [
      'a description with a zero-width space',
      { ...VALID, description: 'C\u200bI' },
      "Invalid field 'description'",
    ],
    [
      'a description with a line separator',
      { ...VALID, description: 'CI\u2028deploys' },
      "Invalid field 'description'",
    ],
    [
      'a description with an escape character',
      { ...VALID, description: '\u001b[2JCI' },
      "Invalid field 'description'",
    ],
  ])('%s is a 400 naming the field', async (_, body, message) => {
    const response = await create(body);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toContain(message);
    expect(await subscriptions.list('key-enterprise')).toEqual([]);
  });

  test.each([
    [
      'https://internal.example.com/hook',
      'https://internal.example.com/hook: 10.0.0.1 is a private address',
    ],
    [
      'https://split.example.com/',
      'https://split.example.com/: 169.254.169.254 is a link-local address (the cloud metadata range)',
    ],
    ['https://127.0.0.1/', 'https://127.0.0.1/: 127.0.0.1 is a loopback address'],
    [
      'https://[::ffff:127.0.0.1]/',
      'https://[::ffff:7f00:1]/: ::ffff:7f00:1 is a loopback address (IPv4-mapped 127.0.0.1)',
    ],
    ['https://[fd00::1]/', 'https://[fd00::1]/: fd00::1 is a unique-local address'],
    ['https://0.0.0.0/', 'https://0.0.0.0/: 0.0.0.0 is an unspecified address'],
    ['http://hooks.example.com/', 'http://hooks.example.com/: the scheme must be https'],
    [
      'https://u:p@hooks.example.com/',
      'https://hooks.example.com/: the URL may not contain credentials',
    ],
    [
      'https://missing.example.com/',
      'https://missing.example.com/: missing.example.com does not resolve (ENOTFOUND)',
    ],
    ['not a url', 'not a url: not an absolute URL'],
  ])('the URL %s is refused with a 400 naming why', async (url, reason) => {
    const response = await create({ ...VALID, url });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: `Invalid field 'url': ${reason}` });
    expect(await subscriptions.list('key-enterprise')).toEqual([]);
  });

  test('POST /webhooks/{id}/test answers 202 and queues a ping for that subscription', async () => {
    const created = (await create(VALID)).json();
    const response = await app.inject({
      method: 'POST',
      url: `/v1/webhooks/${created.id}/test`,
      headers: ENTERPRISE,
    });
    expect(response.statusCode).toBe(202);
    const { eventId } = response.json();
    expect(eventId).toMatch(/^evt_ping_[0-9a-f]{32}$/);
    expect(queue.enqueued).toHaveLength(1);
    const [{ subscription, event }] = queue.enqueued as [(typeof queue.enqueued)[0]];
    expect(subscription).toMatchObject({ id: created.id, secret: created.secret });
    expect(event).toEqual({
      id: eventId,
      type: 'ping',
      timestamp: expect.any(String),
      data: { webhookId: created.id },
    });
    expect(Math.abs(Date.parse(event.timestamp) - Date.now())).toBeLessThan(60_000);

    const again = await app.inject({
      method: 'POST',
      url: `/v1/webhooks/${created.id}/test`,
      headers: ENTERPRISE,
    });
    expect(again.json().eventId).not.toBe(eventId);
  });

  test('a disabled subscription is not pinged: 409 saying why', async () => {
    const created = (await create(VALID)).json();
    await subscriptions.disable(created.id, '2025-02-01T00:00:00.000Z');
    const response = await app.inject({
      method: 'POST',
      url: `/v1/webhooks/${created.id}/test`,
      headers: ENTERPRISE,
    });
    expect(response.statusCode).toBe(409);
    expect(response.json().error).toBe(
      `Webhook '${created.id}' was disabled at 2025-02-01T00:00:00.000Z because its receiver answered 410 Gone; create a new one`,
    );
    expect(queue.enqueued).toEqual([]);
    const detail = await app.inject({ url: `/v1/webhooks/${created.id}`, headers: ENTERPRISE });
    expect(detail.json().disabledAt).toBe('2025-02-01T00:00:00.000Z');
  });

  test('GET /webhooks/{id}/deliveries lists what the queue returns for it', async () => {
    const created = (await create(VALID)).json();
    queue.attemptsToReturn = [
      {
        eventId: 'evt_ping_1',
        type: 'ping',
        attempt: 2,
        at: '2025-02-01T00:00:05.000Z',
        statusCode: 503,
        error: null,
        outcome: 'retrying',
        nextAttemptAt: '2025-02-01T00:05:05.000Z',
      },
      {
        eventId: 'evt_ping_1',
        type: 'ping',
        attempt: 1,
        at: '2025-02-01T00:00:00.000Z',
        statusCode: null,
        error: 'connect ECONNREFUSED',
        outcome: 'retrying',
        nextAttemptAt: '2025-02-01T00:00:05.000Z',
      },
    ];
    const response = await app.inject({
      url: `/v1/webhooks/${created.id}/deliveries`,
      headers: ENTERPRISE,
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ data: queue.attemptsToReturn, meta: { limit: 50 } });
    expect(queue.asked).toEqual([[created.id, 50]]);
  });
});

describe('the webhook endpoints with WEBHOOK_ALLOW_PRIVATE', () => {
  test('http and private addresses are accepted; credentials still are not', async () => {
    const { app, subscriptions } = await webhookApp(true);
    const create = (url: string) =>
      app.inject({
        method: 'POST',
        url: '/v1/webhooks',
        headers: ENTERPRISE,
        payload: { url, events: ['tool.updated'] },
      });
    for (const url of ['http://127.0.0.1:9000/hook', 'https://internal.example.com/']) {
      const response = await create(url);
      expect([url, response.statusCode]).toEqual([url, 201]);
      expect(response.json().url).toBe(url);
    }
    expect((await create('http://u:p@127.0.0.1/')).statusCode).toBe(400);
    await app.close();
    await subscriptions.close();
  });
});
