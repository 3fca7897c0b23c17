import { quotaMarkerKey } from '../../gateway/src/quota/lost-counters-watch';
import { inProcessGateway } from '../support/gateway';
import { freePort, waitFor } from '../support/ports';
import { RedisServer, closeClient } from '../support/redis-server';

const NOON = Date.parse('2026-03-14T12:00:00Z');
const JUST_AFTER_MIDNIGHT = Date.parse('2026-03-15T00:00:10Z');

type Gateway = Awaited<ReturnType<typeof inProcessGateway>>;

/** `gateway_quota_counters_lost_total{evidence}` of an in-process gateway. */
async function lost(gateway: Gateway, evidence: string): Promise<number> {
  const text = await gateway.deps.registry.metrics();
  const match = text.match(
    new RegExp(`^gateway_quota_counters_lost_total\\{evidence="${evidence}"[^}]*\\} (\\d+)`, 'm'),
  );
  if (!match) throw new Error(`no ${evidence} series`);
  return Number(match[1]);
}

/**
 * A Redis that lost its quota counters is noticed, not only survived: every gateway keeps a marker
 * for the day, and says so (a metric an alert follows, a log line) when it vanished or is missing
 * well into the day. The day's counts cannot be brought back; the alert tells the operator that
 * keys may be admitted again up to their quota.
 */
describe('Redis that lost its counters', () => {
  let redis: RedisServer;
  const gateways: Gateway[] = [];
  const start = async (now: number) => {
    const gateway = await inProcessGateway(
      { REDIS_URL: redis.url, CATALOG_URL: `http://127.0.0.1:${await freePort()}` },
      () => now,
    );
    gateways.push(gateway);
    return gateway;
  };
  const markerSet = async (date: string) => {
    const client = redis.client();
    try {
      return (await client.exists(quotaMarkerKey(date))) === 1 ? true : undefined;
    } finally {
      await closeClient(client);
    }
  };

  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    await redis.stop();
  });

  test('a running gateway: the marker is kept; a restart that empties Redis is reported as certain', async () => {
    const gateway = await start(NOON);
    // A new Redis at noon looks like one that lost the morning's counts: said once, as possible.
    await waitFor(async () => ((await lost(gateway, 'marker_missing')) === 1 ? true : undefined), {
      what: 'the missing marker of a new Redis',
    });
    expect(await markerSet('2026-03-14')).toBe(true);
    expect(await lost(gateway, 'marker_vanished')).toBe(0);

    await redis.stop();
    await redis.restart();
    await waitFor(async () => ((await lost(gateway, 'marker_vanished')) === 1 ? true : undefined), {
      what: 'the loss reported',
      timeoutMs: 15_000,
    });
    // Set again, so the next loss is seen too.
    await waitFor(() => markerSet('2026-03-14'), { what: 'the marker set again' });
    expect(await lost(gateway, 'marker_missing')).toBe(1);
    // Nobody else sets the marker in the tests below.
    await gateways.pop()!.close();
  });

  test('a gateway started on an emptied Redis well into the day reports the missing marker', async () => {
    const client = redis.client();
    await client.flushall();
    await closeClient(client);
    const late = await start(NOON);
    await waitFor(async () => ((await lost(late, 'marker_missing')) === 1 ? true : undefined), {
      what: 'the missing marker reported',
    });
    expect(await lost(late, 'marker_vanished')).toBe(0);
  });

  test('just after midnight, a missing marker is the new day, not a loss', async () => {
    const early = await start(JUST_AFTER_MIDNIGHT);
    await waitFor(() => markerSet('2026-03-15'), { what: "the new day's marker" });
    expect(await lost(early, 'marker_missing')).toBe(0);
    expect(await lost(early, 'marker_vanished')).toBe(0);
  });
});
