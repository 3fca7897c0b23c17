import { CatalogClient } from '../../../services/gateway/src/proxy/catalog-client';
import type { FastifyInstance } from 'fastify';
import { QuotaWarnings, warningThreshold } from '../../../services/gateway/src/quota/quota-warning';
import type { QuotaDecision } from '../../../services/gateway/src/quota/quota-limiter';
import { buildCatalogApp } from '../../../services/catalog/src/app';
import { INTERNAL_HEADERS } from '../../../services/shared/contract';
import { dataset, embeddedStore } from '../../support/catalog';
import { waitFor } from '../../support/ports';
import { RedisServer } from '../../support/redis-server';
import { INTERNAL_TOKEN, ServiceProcess, keysCli, tempDataDir } from '../../support/services';
import {
  MemorySubscriptions,
  RecordingQueue,
  deliveringToReceiver,
} from '../../support/webhook-fixtures';
import type { DeliveryQueue } from '../../../services/catalog/src/webhooks/webhook-types';

/**
 * `quota.warning` (docs/api.md#enterprise-export-and-webhooks,
 * docs/api.md#webhook-events-and-deliveries): the gateway reports a key that passed 80% of its
 * daily quota to the catalog's internal endpoint, which enqueues one event per subscription of the
 * key, once per key and UTC day. The catalog here is the real app with its real route, in this
 * process; the subscriptions are held in memory; the queue is a recording double in the unit tests
 * and the real embedded queue, delivering to a local receiver, end to end.
 */
let catalog: FastifyInstance;
let catalogUrl: string;
let subscriptions: MemorySubscriptions;
let queue: RecordingQueue;

async function startCatalog(
  port = 0,
  into: Pick<DeliveryQueue, 'enqueue'> = queue,
): Promise<FastifyInstance> {
  const app = await buildCatalogApp({
    store: embeddedStore(),
    meta: dataset.meta,
    internalToken: INTERNAL_TOKEN,
    logger: false,
    quotaWarnings: { subscriptions, queue: into },
  });
  catalogUrl = await app.listen({ port, host: '127.0.0.1' });
  return app;
}

beforeEach(async () => {
  subscriptions = new MemorySubscriptions();
  queue = new RecordingQueue();
  catalog = await startCatalog();
});
afterEach(() => catalog.close());

const NOON = Date.parse('2026-05-01T12:00:00.000Z');
const MIDNIGHT = Date.parse('2026-05-02T00:00:00.000Z') / 1000;

/** What a gateway sends for the 8th request of a quota of 10 on 2026-05-01. */
const body = {
  limit: 10,
  remaining: 2,
  resetAt: '2026-05-02T00:00:00.000Z',
  at: '2026-05-01T12:00:00.000Z',
};

function decision(used: number, limit = 10, resetAt = MIDNIGHT): QuotaDecision {
  return { allowed: true, limit, remaining: limit - used, resetAt, secondsToReset: 43_200 };
}

test('the threshold is 80% of the quota, rounded up, in exact integers', () => {
  expect([1, 5, 10, 15, 100, 5_000, 50_000].map(warningThreshold)).toEqual([
    1, 4, 8, 12, 80, 4_000, 40_000,
  ]);
});

describe('the gateway reporter (QuotaWarnings)', () => {
  let now: number;
  let warnings: unknown[];
  let reporter: QuotaWarnings;
  let client: CatalogClient;

  beforeEach(() => {
    now = NOON;
    warnings = [];
    client = new CatalogClient({ catalogUrl, timeoutMs: 2_000, onRetry: () => undefined });
    reporter = new QuotaWarnings({
      catalog: client,
      internalToken: INTERNAL_TOKEN,
      clock: () => now,
      logger: { warn: (...args: unknown[]) => warnings.push(args) },
    });
  });
  afterEach(async () => {
    await reporter.close();
    await client.close();
  });

  test('reports an Enterprise key once, from the request that reaches 80%', async () => {
    const subscription = subscriptions.add({ keyId: 'key_ent', events: ['quota.warning'] });
    subscriptions.add({ keyId: 'key_ent', events: ['tool.created'] });
    subscriptions.add({ keyId: 'key_other', events: ['quota.warning'] });

    for (let used = 1; used < 8; used++) reporter.observe('key_ent', 'enterprise', decision(used));
    await reporter.close();
    expect(queue.calls).toBe(0);

    for (const used of [8, 9, 10]) reporter.observe('key_ent', 'enterprise', decision(used));
    await reporter.close();
    expect(queue.calls).toBe(1);
    expect(queue.for(subscription)).toEqual([
      {
        id: `evt_quota_key_ent_2026-05-01_${subscription.id}`,
        type: 'quota.warning',
        timestamp: '2026-05-01T12:00:00.000Z',
        data: {
          keyId: 'key_ent',
          tier: 'enterprise',
          limit: 10,
          remaining: 2,
          resetAt: '2026-05-02T00:00:00.000Z',
        },
      },
    ]);
    expect(queue.events.size).toBe(1);
  });

  test('reports again on the next UTC day; never for keys of other tiers', async () => {
    const enterprise = subscriptions.add({ keyId: 'key_ent', events: ['quota.warning'] });
    // Only Enterprise keys can subscribe; a Pro key's report would be wasted.
    subscriptions.add({ keyId: 'key_pro', events: ['quota.warning'] });
    reporter.observe('key_pro', 'pro', decision(8));
    reporter.observe('key_ent', 'enterprise', decision(8));
    await reporter.close();
    now += 86_400_000;
    reporter.observe('key_ent', 'enterprise', decision(9, 10, MIDNIGHT + 86_400));
    await reporter.close();

    expect(queue.for(enterprise).map((e) => e.id)).toEqual([
      `evt_quota_key_ent_2026-05-01_${enterprise.id}`,
      `evt_quota_key_ent_2026-05-02_${enterprise.id}`,
    ]);
    expect(queue.events.size).toBe(2);
  });

  test('a catalog that is down costs the request nothing; a later request, a minute on, retries', async () => {
    const subscription = subscriptions.add({ keyId: 'key_ent', events: ['quota.warning'] });
    await catalog.close();
    reporter.observe('key_ent', 'enterprise', decision(8));
    await reporter.close();
    reporter.observe('key_ent', 'enterprise', decision(9));
    await reporter.close();
    expect(warnings).toHaveLength(1);

    catalog = await startCatalog(Number(new URL(catalogUrl).port));
    now += 30_000;
    reporter.observe('key_ent', 'enterprise', decision(9));
    await reporter.close();
    expect(queue.calls).toBe(0);

    now += 31_000;
    reporter.observe('key_ent', 'enterprise', decision(10));
    await reporter.close();
    expect(queue.for(subscription).map((e) => e.data.remaining)).toEqual([0]);
    // One failure, one warning: the second observation did not even try.
    expect(warnings).toHaveLength(1);
  });
});

describe('the catalog endpoint POST /internal/v1/quota-warnings', () => {
  const asGateway = {
    [INTERNAL_HEADERS.token]: INTERNAL_TOKEN,
    [INTERNAL_HEADERS.tier]: 'enterprise',
    [INTERNAL_HEADERS.keyId]: 'key_ent',
  };

  test('needs the internal token and a valid body', async () => {
    subscriptions.add({ keyId: 'key_ent', events: ['quota.warning'] });
    const post = (headers: Record<string, string>, payload: object) =>
      catalog.inject({ method: 'POST', url: '/internal/v1/quota-warnings', headers, payload });

    expect(
      (await post({ ...asGateway, [INTERNAL_HEADERS.token]: 'forged' }, body)).statusCode,
    ).toBe(401);
    const invalid = await post(asGateway, { ...body, resetAt: 'tomorrow' });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json()).toEqual({ error: expect.stringContaining('resetAt') });
    expect(queue.calls).toBe(0);

    expect((await post(asGateway, body)).statusCode).toBe(202);
    expect((await post(asGateway, body)).statusCode).toBe(202);
    expect(queue.calls).toBe(2);
    expect(queue.events.size).toBe(1);
  });
});

describe('an Enterprise key through two gateway processes sharing Redis', () => {
  const dataDir = tempDataDir();
  let redis: RedisServer;
  let gateways: ServiceProcess[];
  let delivery: Awaited<ReturnType<typeof deliveringToReceiver>>;
  let reports = 0;

  beforeEach(async () => {
    // This catalog enqueues on the real embedded queue, whose worker delivers to a receiver;
    // the reports it takes are counted on the way.
    delivery = await deliveringToReceiver(subscriptions);
    await catalog.close();
    catalog = await startCatalog(0, {
      enqueue: (subscription, event) => {
        reports += 1;
        return delivery.queue.enqueue(subscription, event);
      },
    });
    redis = await RedisServer.start();
    const env = {
      DATA_DIR: dataDir,
      REDIS_URL: redis.url,
      CATALOG_URL: catalogUrl,
      QUOTA_ENTERPRISE: '10',
    };
    gateways = await Promise.all([
      ServiceProcess.start('gateway', env),
      ServiceProcess.start('gateway', env),
    ]);
  });
  afterEach(async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await redis.stop();
    await delivery.close();
  });

  test('gets exactly one quota.warning for the day, and the gateway never routes the endpoint', async () => {
    const { apiKey, keyId } = (await keysCli(
      ['create', '--tier', 'enterprise', '--email', 'quota@example.com', '--name', 'Quota'],
      { DATA_DIR: dataDir },
    )) as { apiKey: string; keyId: string };
    const subscription = subscriptions.add({
      keyId,
      url: delivery.receiver.url,
      events: ['quota.warning'],
    });

    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const response = await fetch(`${gateways[i % 2]!.url}/v1/tools?limit=1`, {
        headers: { 'x-api-key': apiKey },
      });
      await response.arrayBuffer();
      statuses.push(response.status);
      // The reports leave in the background: the 8th's is let arrive before the 9th is sent,
      // or the 9th's could reach the catalog first and be the one kept.
      if (i === 7) await waitFor(async () => (reports >= 1 ? true : undefined), { what: 'report' });
    }
    expect(statuses).toEqual([...Array(10).fill(200), 429, 429]);

    // The 8th request (second gateway) crossed 80%; the 9th was the first gateway's first past
    // it: both report, and the queue keeps one event of the two.
    await waitFor(async () => (reports >= 2 ? true : undefined), { what: 'both reports' });
    await waitFor(async () => ((await delivery.queue.backlog()).pending === 0 ? true : undefined), {
      what: 'the queue to be empty',
    });
    const [body, ...others] = delivery.verifiedBodies(subscription);
    expect(others).toEqual([]);
    const day = new Date().toISOString().slice(0, 10);
    const next = new Date(`${day}T00:00:00.000Z`).getTime() + 86_400_000;
    expect(body).toEqual({
      type: 'quota.warning',
      timestamp: expect.stringMatching(new RegExp(`^${day}T`)),
      data: {
        keyId,
        tier: 'enterprise',
        limit: 10,
        remaining: 2,
        resetAt: new Date(next).toISOString(),
      },
    });
    expect(delivery.receiver.requests[0]!.headers['webhook-id']).toBe(
      `evt_quota_${keyId}_${day}_${subscription.id}`,
    );

    for (const method of ['GET', 'POST']) {
      const response = await fetch(`${gateways[0]!.url}/internal/v1/quota-warnings`, {
        method,
        headers: {
          'content-type': 'application/json',
          [INTERNAL_HEADERS.token]: INTERNAL_TOKEN,
          [INTERNAL_HEADERS.tier]: 'enterprise',
          [INTERNAL_HEADERS.keyId]: keyId,
        },
        ...(method === 'POST' ? { body: JSON.stringify(body) } : {}),
      });
      expect(response.status).toBe(404);
    }
    expect(reports).toBe(2);
  });
});
