import { QuotaLimiter } from '../../services/gateway/src/quota/quota-limiter';
import { RedisChangeFeed } from '../../services/shared/change-feed/redis-change-feed';
import { type RedisClient, redisConnector } from '../../services/shared/redis';
import type { RedisSettings } from '../../services/shared/redis-config';
import { waitFor } from '../support/ports';
import { RedisCluster } from '../support/redis-cluster';
import { within } from '../support/waits';

const PASSWORD = 'cluster-secret-0123456789';

/**
 * A Redis Cluster as managed services run it: TLS only, with a certificate of a private CA
 * (REDIS_TLS_CA_FILE) that names the service rather than the nodes' addresses
 * (REDIS_TLS_SERVERNAME), and a password (REDIS_PASSWORD). Quotas count exactly and the change
 * feed carries messages over it; a wrong name or password is refused.
 */
describe('a Redis Cluster with TLS and a password', () => {
  let cluster: RedisCluster;
  const clients: RedisClient[] = [];

  beforeAll(async () => {
    cluster = await RedisCluster.start({ secure: { password: PASSWORD } });
  }, 60_000);
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await cluster?.stop();
  });

  const connect = (settings: RedisSettings, hotPath = false) => {
    const client = redisConnector(settings)!.connect('tls-test', {
      hotPath,
      queueWhileDisconnected: !hotPath,
    });
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  };
  const ready = (client: RedisClient) =>
    new Promise<void>((resolve, reject) => {
      client.once('ready', resolve);
      const timeoutMs = within(0);
      setTimeout(() => reject(new Error(`not ready within ${timeoutMs} ms`)), timeoutMs).unref();
    });

  test('quotas are exact: 150 concurrent requests of one key admit its 100', async () => {
    const redis = connect(cluster.settings, true);
    await ready(redis);
    const quota = new QuotaLimiter({
      quotas: { free: 100, pro: 1_000, enterprise: 1_000 },
      clock: Date.now,
      redis,
    });
    try {
      const decisions = await Promise.all(
        Array.from({ length: 150 }, () => quota.consume('tls-key', 'free')),
      );
      expect(decisions.filter((d) => d.allowed)).toHaveLength(100);
      expect(quota.problem()).toBeUndefined();
    } finally {
      quota.close();
    }
  });

  test('the change feed carries messages', async () => {
    const feed = new RedisChangeFeed(connect(cluster.settings), () => connect(cluster.settings));
    const heard: (string | null)[] = [];
    await feed.subscribe('catalog', (message) => heard.push(message));
    await feed.publish('catalog', '42');
    await waitFor(async () => (heard.includes('42') ? true : undefined), {
      what: 'the message over TLS',
    });
    await feed.close();
  });

  test.each([
    // ioredis reports the refused certificate as a closed connection.
    ['without the name the certificate gives', { REDIS_TLS_SERVERNAME: undefined }, /closed/],
    ['with a wrong password', { REDIS_PASSWORD: 'not-the-password' }, /WRONGPASS|invalid password/],
  ])('refused %s', async (_what, change, reason) => {
    const client = connect({ ...cluster.settings, ...change });
    const errors: string[] = [];
    client.on('node error', (err: Error) => errors.push(err.message));
    client.on('error', (err: Error) => errors.push(err.message));
    await expect(ready(client)).rejects.toThrow('not ready');
    expect(errors.join('\n')).toMatch(reason);
    client.disconnect();
  });
});
