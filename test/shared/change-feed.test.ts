import type { ChangeFeed } from '../../services/shared/change-feed/change-feed';
import { LocalChangeFeed } from '../../services/shared/change-feed/local-change-feed';
import { RedisChangeFeed } from '../../services/shared/change-feed/redis-change-feed';
import { type RedisClient, type RedisConnector, redisConnector } from '../../services/shared/redis';
import { waitFor } from '../support/ports';
import { RedisCluster } from '../support/redis-cluster';
import { RedisServer, closeClient } from '../support/redis-server';
import { tempDataDir } from '../support/services';

/** Collects what a listener hears. */
function recorder() {
  const heard: (string | null)[] = [];
  return { heard, listener: (message: string | null) => heard.push(message) };
}

async function heardWithin(heard: (string | null)[], expected: (string | null)[], what: string) {
  await waitFor(
    async () => (JSON.stringify(heard) === JSON.stringify(expected) ? true : undefined),
    {
      timeoutMs: 1_000,
      intervalMs: 10,
      what,
    },
  );
}

/**
 * The change feed contract on every implementation: a message published by one process reaches
 * every subscriber of its topic (the publisher's own included) within a second, and no other topic.
 * Two feed instances with their own connections stand for two processes. On a Redis Cluster each
 * has its own cluster client, made by the services' factory from REDIS_CLUSTER_NODES; a master
 * lost and replaced by its replica is said to the listeners (`null`), and the feed goes on.
 */
describe.each([
  ['local (SQLite under DATA_DIR)', 'local'],
  ['Redis pub/sub', 'redis'],
  ['Redis Cluster pub/sub', 'cluster'],
] as const)('change feed: %s', (_name, kind) => {
  let redis: RedisServer | undefined;
  let cluster: RedisCluster | undefined;
  let connector: RedisConnector | undefined;
  let feeds: ChangeFeed[];
  const clients: RedisClient[] = [];

  beforeAll(async () => {
    if (kind === 'redis') redis = await RedisServer.start();
    // Replicas, so that a master can be lost and replaced.
    if (kind === 'cluster') cluster = await RedisCluster.start({ masters: 3, replicas: 1 });
    connector = redisConnector(redis ? { REDIS_URL: redis.url } : (cluster?.settings ?? {}));
  }, 60_000);
  afterAll(async () => {
    await redis?.stop();
    await cluster?.stop();
  });

  const connect = (name: string) => {
    const client = connector!.connect(name, { queueWhileDisconnected: true });
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  };

  beforeEach(() => {
    const dataDir = tempDataDir();
    feeds = [0, 1].map((i) =>
      kind === 'local'
        ? new LocalChangeFeed(dataDir)
        : new RedisChangeFeed(connect(`feed-${i}`), () => connect(`feed-${i}-subscriber`)),
    );
  });
  afterEach(async () => {
    await Promise.all(feeds.map((f) => f.close()));
    await Promise.all(clients.splice(0).map(closeClient));
  });

  test('a publish reaches every subscriber of the topic, in order, and no other topic', async () => {
    const [a, b] = feeds as [ChangeFeed, ChangeFeed];
    const keysA = recorder();
    const keysB = recorder();
    const catalogB = recorder();
    await a.subscribe('keys', keysA.listener);
    await b.subscribe('keys', keysB.listener);
    await b.subscribe('catalog', catalogB.listener);
    await a.publish('keys', 'one');
    await a.publish('keys', 'two');
    await b.publish('catalog', '42');
    await heardWithin(keysB.heard, ['one', 'two'], 'the other process hears the keys topic');
    await heardWithin(keysA.heard, ['one', 'two'], 'the publisher hears its own messages');
    await heardWithin(catalogB.heard, ['42'], 'the catalog topic on its own');
  });

  test('a listener that unsubscribed hears nothing more', async () => {
    const [a, b] = feeds as [ChangeFeed, ChangeFeed];
    const kept = recorder();
    const dropped = recorder();
    await b.subscribe('keys', kept.listener);
    const stop = await b.subscribe('keys', dropped.listener);
    stop();
    await a.publish('keys', 'after');
    await heardWithin(kept.heard, ['after'], 'the kept listener');
    expect(dropped.heard).toEqual([]);
  });

  if (kind === 'cluster') {
    test('a master lost and replaced: listeners hear null, and messages flow again', async () => {
      const [a, b] = feeds as [ChangeFeed, ChangeFeed];
      const listener = recorder();
      await b.subscribe('keys', listener.listener);
      await a.publish('keys', 'before');
      await heardWithin(listener.heard, ['before'], 'a message before the failover');
      await (await cluster!.masters())[0]!.kill();
      await waitFor(async () => (listener.heard.includes(null) ? true : undefined), {
        timeoutMs: 20_000,
        what: 'null after the failover',
      });
      await cluster!.healthy();
      const heardBefore = listener.heard.length;
      await waitFor(
        async () => {
          await a.publish('keys', 'after').catch(() => undefined);
          return listener.heard.slice(heardBefore).includes('after') ? true : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 200, what: 'a message after the failover' },
      );
    }, 40_000);
  }

  if (kind === 'redis') {
    test('after the subscriber reconnects, listeners hear null (forget what you cached)', async () => {
      const [, b] = feeds as [ChangeFeed, ChangeFeed];
      const listener = recorder();
      await b.subscribe('keys', listener.listener);
      await redis!.stop();
      await redis!.restart();
      await waitFor(async () => (listener.heard.includes(null) ? true : undefined), {
        timeoutMs: 10_000,
        what: 'null after the reconnect',
      });
    });
  }
});
