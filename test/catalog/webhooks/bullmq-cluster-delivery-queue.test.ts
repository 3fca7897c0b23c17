import { RedisCluster } from '../../support/redis-cluster';
import { tempDataDir } from '../../support/services';
import { deliveryQueueSuite } from './delivery-queue-suite';

let cluster: RedisCluster;

beforeAll(async () => {
  // What BullMQ requires of Redis: never evict a key (a queued delivery).
  cluster = await RedisCluster.start({ config: ['--maxmemory-policy', 'noeviction'] });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

/**
 * The same deliveries on a Redis Cluster of three masters (REDIS_CLUSTER_NODES): BullMQ's
 * scripts touch several keys at once, which the cluster allows because the queue's prefix is
 * hash-tagged; the worker killed with SIGKILL is one of the suite's cases.
 */
deliveryQueueSuite('BullMQ (a real Redis Cluster)', async () => {
  await cluster.flushall();
  return { DATA_DIR: tempDataDir(), ...cluster.env };
});
