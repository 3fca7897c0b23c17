import { type AddressInfo, connect, createServer } from 'node:net';
import {
  MARKER_CHECK_MS,
  quotaMarkerKey,
  watchForLostCounters,
} from '../../../services/gateway/src/quota/lost-counters-watch';
import { createRedis } from '../../../services/shared/redis';
import { inProcessGateway } from '../../support/gateway';
import { freePort, waitFor } from '../../support/ports';
import { RedisServer, closeClient } from '../../support/redis-server';
import { within } from '../../support/waits';

const NOON = Date.parse('2026-03-14T12:00:00Z');
const JUST_AFTER_MIDNIGHT = Date.parse('2026-03-15T00:00:10Z');

/**
 * A gateway reports what it finds at its first look at the day's marker, made when its connection
 * is ready, and looks again every MARKER_CHECK_MS: a wait for a report is as long as the next look.
 */
const NEXT_LOOK_MS = within(MARKER_CHECK_MS);
/** Starts of a gateway whose first look may have gone unanswered (see startOnEmptyRedis). */
const STARTS = 3;
jest.setTimeout(STARTS * NEXT_LOOK_MS + 2 * NEXT_LOOK_MS);

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

/** How often an in-process gateway's Redis connections failed (0 before the first failure). */
async function connectionErrors(gateway: Gateway): Promise<number> {
  const text = await gateway.deps.registry.metrics();
  const match = /^gateway_redis_errors_total\{operation="connection"[^}]*\} (\d+)/m.exec(text);
  return Number(match?.[1] ?? 0);
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
  /**
   * A gateway started at `now` on an empty Redis, once its first look at the marker has been
   * answered and `marker_missing` reported. That look is a SET NX on the quota's connection, which
   * drops when no reply has come within COMMAND_TIMEOUT_MS (services/shared/redis.ts): building
   * the app can stall a busy machine's event loop that long, and a reply lost so leaves the marker
   * set without the gateway knowing that it set it, so it cannot report it. A start whose
   * connection failed proves nothing either way: it is made again on an emptied Redis.
   */
  const startOnEmptyRedis = async (now: number) => {
    const outcomes: string[] = [];
    for (let attempt = 1; attempt <= STARTS; attempt++) {
      const gateway = await start(now);
      const outcome = await waitFor(
        async () => {
          if ((await lost(gateway, 'marker_missing')) === 1) return 'reported';
          return (await connectionErrors(gateway)) > 0 ? 'connection failed' : undefined;
        },
        { what: 'the missing marker reported, or the connection failed', timeoutMs: NEXT_LOOK_MS },
      );
      if (outcome === 'reported') return gateway;
      outcomes.push(outcome);
      await gateways.pop()!.close();
      const client = redis.client();
      await client.flushall();
      await closeClient(client);
    }
    throw new Error(`no start reported the missing marker: ${outcomes.join(', ')}`);
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
    // A new Redis at noon looks like one that lost the morning's counts: said once, as possible.
    const gateway = await startOnEmptyRedis(NOON);
    expect(await markerSet('2026-03-14')).toBe(true);
    expect(await lost(gateway, 'marker_vanished')).toBe(0);

    await redis.stop();
    await redis.restart();
    // Seen at the look made once reconnected, or at the next one.
    await waitFor(async () => ((await lost(gateway, 'marker_vanished')) === 1 ? true : undefined), {
      what: 'the loss reported',
      timeoutMs: NEXT_LOOK_MS,
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
    const late = await startOnEmptyRedis(NOON);
    expect(await lost(late, 'marker_vanished')).toBe(0);
  });

  test('just after midnight, a missing marker is the new day, not a loss', async () => {
    const early = await start(JUST_AFTER_MIDNIGHT);
    await waitFor(() => markerSet('2026-03-15'), {
      what: "the new day's marker",
      timeoutMs: NEXT_LOOK_MS,
    });
    expect(await lost(early, 'marker_missing')).toBe(0);
    expect(await lost(early, 'marker_vanished')).toBe(0);
  });
});

/**
 * Between a client and Redis: passes everything both ways, except that the reply to the first
 * command naming a quota marker is swallowed and the connection cut, as a network that fails
 * after Redis carried the command out does. Resolves with its port.
 */
async function cutAfterFirstMarker(redisPort: number) {
  let cut = false;
  const proxy = createServer((client) => {
    const server = connect(redisPort, '127.0.0.1');
    let armed = false;
    client.on('data', (chunk) => {
      if (!cut && chunk.includes('quota-marker')) armed = true;
      server.write(chunk);
    });
    server.on('data', (chunk) => {
      if (!armed) return void client.write(chunk);
      cut = true;
      armed = false;
      client.destroy();
      server.destroy();
    });
    client.on('error', () => server.destroy());
    server.on('error', () => client.destroy());
    client.on('close', () => server.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    port: (proxy.address() as AddressInfo).port,
    cut: () => cut,
    close: () => new Promise((resolve) => proxy.close(resolve)),
  };
}

/**
 * The first look's SET NX can reach Redis and set the marker while its reply is lost. The marker
 * then holds this gateway's own token, and its next look still reports the missing marker.
 */
test('a first look whose reply was lost still reports the missing marker', async () => {
  const redis = await RedisServer.start();
  const proxy = await cutAfterFirstMarker(redis.port);
  const client = createRedis(`redis://127.0.0.1:${proxy.port}`, 'gateway', { hotPath: true });
  client.on('error', () => undefined);
  const reports: string[] = [];
  const stop = watchForLostCounters(client, {
    clock: () => NOON,
    logger: { warn: () => undefined, error: () => undefined },
    onLost: (evidence) => reports.push(evidence),
  });
  try {
    await waitFor(async () => (proxy.cut() ? true : undefined), { what: 'the first reply cut' });
    const reader = redis.client();
    expect(await reader.exists(quotaMarkerKey('2026-03-14'))).toBe(1);
    await closeClient(reader);
    await waitFor(async () => (reports.length > 0 ? true : undefined), {
      what: 'the missing marker reported at the look made once reconnected',
      timeoutMs: NEXT_LOOK_MS,
    });
    expect(reports).toEqual(['marker_missing']);
  } finally {
    stop();
    await closeClient(client);
    await proxy.close();
    await redis.stop();
  }
});
