import Database from 'better-sqlite3';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { keyDigest } from '../../../services/gateway/src/keys/api-key';
import { decodeKeyChange } from '../../../services/gateway/src/keys/key-change';
import { CHANGE_FEED_FILE } from '../../../services/shared/change-feed/local-change-feed';
import { RedisServer } from '../../support/redis-server';
import { waitFor } from '../../support/ports';
import { ServiceProcess, keysCli, registerKey, tempDataDir } from '../../support/services';
import { PROPAGATION_MS, within } from '../../support/waits';

interface KeySummary {
  apiKey?: string;
  keyId: string;
  tier: string;
  status: string;
}

/**
 * docs/api.md#api-keys-and-registration: a key created, revoked or re-tiered with `npm run keys`
 * takes effect on the running system within one second: through Redis pub/sub when Redis is there,
 * through the local change feed under DATA_DIR otherwise.
 *
 * The second is counted from the CLI's announcement, as the feed itself timestamps it (Redis
 * MONITOR, or the row's time in the local feed), on the machine's clock like the probes. A probe
 * sent a second or more after the announcement reaches the gateway later still, so it must see
 * the change: that holds however slowly a loaded machine answers the probes, and fails when the
 * change waits for the key cache to expire.
 */
describe.each([
  ['with Redis pub/sub', true],
  ['with the local change feed under DATA_DIR', false],
])('key changes from the CLI reach a running gateway %s', (_name, withRedis) => {
  let redis: RedisServer | undefined;
  let catalog: ServiceProcess;
  let gateway: ServiceProcess;
  let storeEnv: Record<string, string>;
  let monitor: Redis | undefined;
  /** Redis's time (ms) of every PUBLISH of a key digest, in order. */
  const published = new Map<string, number[]>();

  beforeAll(async () => {
    redis = withRedis ? await RedisServer.start() : undefined;
    if (redis) {
      monitor = await redis.client().monitor();
      monitor.on('monitor', (time: string, args: string[]) => {
        if (args[0]?.toLowerCase() !== 'publish' || args[2] === undefined) return;
        const digest = decodeKeyChange(args[2])?.digest;
        if (digest === undefined) return;
        published.set(digest, [...(published.get(digest) ?? []), Number(time) * 1000]);
      });
    }
    storeEnv = { DATA_DIR: tempDataDir(), ...(redis ? { REDIS_URL: redis.url } : {}) };
    catalog = await ServiceProcess.start('catalog', {});
    gateway = await ServiceProcess.start('gateway', {
      CATALOG_URL: catalog.url,
      REGISTRATIONS_PER_HOUR: '1000',
      ...storeEnv,
    });
  });

  afterAll(async () => {
    monitor?.disconnect();
    await Promise.all([gateway.stop(), catalog.stop()]);
    await redis?.stop();
  });

  /** When the feed carried the change of this key announced at or after `since`. */
  async function announcedAt(key: string, since: number): Promise<number> {
    const digest = keyDigest(key);
    if (withRedis) {
      // MONITOR reports what Redis did; its report may trail the CLI's exit a little.
      return waitFor(async () => published.get(digest)?.findLast((at) => at >= since), {
        what: 'the PUBLISH on Redis',
      });
    }
    const feed = new Database(path.join(storeEnv.DATA_DIR!, CHANGE_FEED_FILE), {
      readonly: true,
    });
    try {
      const row = feed
        .prepare<[string, number], { at: number }>(
          "SELECT at FROM feed WHERE topic = 'keys' AND message ->> '$.digest' = ? AND at >= ? ORDER BY seq DESC",
        )
        .get(digest, since);
      if (!row) throw new Error('the CLI announced nothing on the local feed');
      return row.at;
    } finally {
      feed.close();
    }
  }

  const status = async (key: string, path = '/v1/categories') => {
    const response = await fetch(`${gateway.url}${path}`, { headers: { 'x-api-key': key } });
    await response.arrayBuffer();
    return response.status;
  };

  /**
   * Runs the CLI (`change` resolves with the API key it changed), then polls every 20 ms until
   * the probe answers `expected`, with a deadline for a loaded machine. No probe sent a second
   * or more after the announcement may have missed the change.
   */
  async function expectWithinOneSecond(
    change: () => Promise<string>,
    probe: (key: string) => Promise<number>,
    expected: number,
  ) {
    const since = Date.now();
    const key = await change();
    const missedAt: number[] = [];
    await waitFor(
      async () => {
        const sentAt = Date.now();
        if ((await probe(key)) === expected) return true;
        missedAt.push(sentAt);
        return undefined;
      },
      { timeoutMs: within(PROPAGATION_MS), intervalMs: 20, what: `status ${expected}` },
    );
    const announced = await announcedAt(key, since);
    const lastMiss = missedAt.at(-1) ?? announced;
    expect(lastMiss - announced).toBeLessThan(PROPAGATION_MS);
  }

  test('revoke, by key or by id', async () => {
    const key = await registerKey(gateway.url);
    expect(await status(key)).toBe(200);
    await expectWithinOneSecond(
      async () => {
        const revoked = (await keysCli(['revoke', key], storeEnv)) as KeySummary;
        expect(revoked.status).toBe('revoked');
        return key;
      },
      status,
      401,
    );

    const other = await registerKey(gateway.url);
    expect(await status(other)).toBe(200);
    const listed = (await keysCli(['list'], storeEnv)) as KeySummary[];
    const id = listed.filter((k) => k.status === 'active').at(-1)!.keyId;
    await expectWithinOneSecond(
      async () => {
        await keysCli(['revoke', id], storeEnv);
        return other;
      },
      status,
      401,
    );
  });

  test('set-tier opens /compare to a former Free key', async () => {
    const key = await registerKey(gateway.url);
    const compare = (k: string) => status(k, '/v1/compare/langchain/llamaindex');
    expect(await compare(key)).toBe(403);
    await expectWithinOneSecond(
      async () => {
        const updated = (await keysCli(['set-tier', key, 'pro'], storeEnv)) as KeySummary;
        expect(updated.tier).toBe('pro');
        return key;
      },
      compare,
      200,
    );
    const response = await fetch(`${gateway.url}/v1/categories`, { headers: { 'x-api-key': key } });
    expect(response.headers.get('x-ratelimit-limit')).toBe('5000');
  });

  test('a key created by the CLI works at once, and its JSON names the key and tier', async () => {
    await expectWithinOneSecond(
      async () => {
        const created = (await keysCli(
          [
            'create',
            '--tier',
            'enterprise',
            '--email',
            `ent-${Date.now()}@example.com`,
            '--name',
            'Acme',
          ],
          storeEnv,
        )) as KeySummary;
        expect(created.tier).toBe('enterprise');
        expect(created.apiKey).toMatch(/^tdk_[0-9A-Za-z]{38}$/);
        return created.apiKey!;
      },
      status,
      200,
    );
  });
});
