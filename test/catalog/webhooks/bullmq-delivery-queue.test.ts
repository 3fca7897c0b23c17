import { RedisServer } from '../../support/redis-server';
import { tempDataDir } from '../../support/services';
import { deliveryQueueSuite } from './delivery-queue-suite';

let redis: RedisServer;

beforeAll(async () => {
  // What BullMQ requires of Redis: never evict a key (a queued delivery).
  redis = await RedisServer.start(['--maxmemory-policy', 'noeviction']);
});

afterAll(async () => {
  await redis?.stop();
});

deliveryQueueSuite('BullMQ (a real redis-server)', async () => {
  const client = redis.client();
  try {
    await client.flushall();
  } finally {
    client.disconnect();
  }
  return { DATA_DIR: tempDataDir(), REDIS_URL: redis.url };
});
