import { decodeKeyChange } from '../../services/gateway/src/keys/key-change';
import { Redis } from 'ioredis';
import { keyDigest } from '../../services/gateway/src/keys/api-key';
import { waitFor } from '../support/ports';
import { redisClusterStack } from '../support/redis-cluster-stack';
import { type ServiceProcess, keysCli } from '../support/services';
import { PROPAGATION_MS, within } from '../support/waits';

/**
 * The whole system on a Redis Cluster of three masters, named by REDIS_CLUSTER_NODES as an
 * operator would: a catalog and two gateway processes (sharing the key store) and the keys CLI.
 * Quotas stay exact across gateways, each key's daily counter is one key on one shard, every
 * shard holds the day's marker, and a revocation reaches every gateway within a second.
 */
describe('the system on a Redis Cluster', () => {
  const monitors: Redis[] = [];
  // Declared before the stack's hooks so that it runs first: a monitor still open when its node
  // has stopped leaves ioredis's 2 s disconnect timer behind.
  afterAll(() => {
    for (const monitor of monitors) monitor.disconnect();
  });
  const stack = redisClusterStack({ masters: 3 });
  /** Redis's time (ms) of every PUBLISH of a key digest, on whichever node it was sent to. */
  const published = new Map<string, number[]>();
  const today = () => new Date().toISOString().slice(0, 10);

  beforeAll(async () => {
    for (const node of stack.cluster.nodes) {
      // monitor() opens a connection of its own; this one never connects.
      const options = { lazyConnect: true, retryStrategy: () => null };
      const monitor = await new Redis(node.port, '127.0.0.1', options).monitor();
      monitor.on('error', () => undefined);
      monitor.on('monitor', (time: string, args: string[]) => {
        if (args[0]?.toLowerCase() !== 'publish' || args[2] === undefined) return;
        const digest = decodeKeyChange(args[2])?.digest;
        if (digest === undefined) return;
        published.set(digest, [...(published.get(digest) ?? []), Number(time) * 1000]);
      });
      monitors.push(monitor);
    }
  });

  const { createKey } = stack;
  const status = (gateway: ServiceProcess, key: string) => stack.call(gateway, key);

  test('300 concurrent requests of one key over two gateways: exactly its quota of 100', async () => {
    const { apiKey, keyId } = await createKey('free');
    const statuses = await Promise.all(
      Array.from({ length: 300 }, (_, i) => status(stack.gateways[i % 2]!, apiKey)),
    );
    expect({
      ok: statuses.filter((s) => s === 200).length,
      limited: statuses.filter((s) => s === 429).length,
      other: statuses.filter((s) => s !== 200 && s !== 429),
    }).toEqual({ ok: 100, limited: 200, other: [] });

    // One key on one shard: the master that serves its slot holds it, no other master does.
    const counter = `quota:${keyId}:${today()}`;
    const owner = await stack.cluster.masterOf(counter);
    for (const master of await stack.cluster.masters()) {
      const keys = (await master.command('KEYS', `quota:${keyId}:*`)) as string[];
      expect(keys).toEqual(master === owner ? [counter] : []);
    }
    expect(await owner.command('GET', counter)).toBe('100');
  });

  test("every shard holds the day's quota marker, and registrations are counted", async () => {
    const masters = await stack.cluster.masters();
    const markers = await Promise.all(
      masters.map(async (m) => (await m.command('KEYS', `quota-marker:${today()}*`)) as string[]),
    );
    expect(markers.map((keys) => keys.length)).toEqual(masters.map(() => 1));

    const response = await fetch(`${stack.gateways[0]!.url}/v1/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `cluster-${Date.now()}@example.com`, name: 'C' }),
    });
    expect(response.status).toBe(201);
    const registrations = await Promise.all(
      masters.map(async (m) => (await m.command('KEYS', 'register:*')) as string[]),
    );
    expect(registrations.flat()).toHaveLength(1);
  });

  test("each gateway checks every master's persistence and eviction settings", async () => {
    for (const gateway of stack.gateways) {
      // The check runs beside the start (a node not yet connected is asked again a second
      // later), so its lines may come after the gateway is ready.
      const redisLines = () => gateway.output.filter((line) => line.includes('Redis'));
      const warned = () =>
        new Set(
          redisLines()
            .filter((line) => line.includes('Redis keeps nothing on disk'))
            .map((line) => (JSON.parse(line) as { node: string }).node),
        );
      await waitFor(async () => (warned().size === 3 ? true : undefined), {
        what: 'a warning for each master',
      }).catch(() => undefined);
      // On failure, the diff shows every line the gateway logged about Redis.
      expect({ warnedNodes: warned().size, redisLines: redisLines() }).toEqual({
        warnedNodes: 3,
        redisLines: expect.any(Array),
      });
    }
  });

  test('a key revoked with the CLI is refused by every gateway within a second', async () => {
    const { apiKey } = await createKey('free');
    for (const gateway of stack.gateways) expect(await status(gateway, apiKey)).toBe(200);
    const since = Date.now();
    await keysCli(['revoke', apiKey], stack.storeEnv);
    const digest = keyDigest(apiKey);
    // Redis's own time of the announcement (MONITOR on every node).
    const announced = await waitFor(async () => published.get(digest)?.find((at) => at >= since), {
      what: 'the PUBLISH of the revocation',
    });
    for (const gateway of stack.gateways) {
      // A probe sent a second or more after the announcement must see the revocation.
      const missedAt: number[] = [];
      await waitFor(
        async () => {
          const sentAt = Date.now();
          if ((await status(gateway, apiKey)) === 401) return true;
          missedAt.push(sentAt);
          return undefined;
        },
        { timeoutMs: within(PROPAGATION_MS), intervalMs: 20, what: 'status 401' },
      );
      expect((missedAt.at(-1) ?? announced) - announced).toBeLessThan(PROPAGATION_MS);
    }
  });
});
