import pino from 'pino';
import { checkRedisForQuotas } from '../../../services/gateway/src/quota/redis-watch';
import { createRedis } from '../../../services/shared/redis';
import { RedisServer } from '../../support/redis-server';

/**
 * What the gateway says at start about the Redis it is given for quotas: counters must survive
 * a restart and never be evicted (docs/deploy.md, "Redis for quotas").
 */
describe.each([
  ['keeps nothing on disk', [], { warn: ['keeps nothing on disk'] }],
  [
    'evicts keys under memory pressure',
    ['--appendonly', 'yes', '--maxmemory-policy', 'allkeys-lru'],
    { warn: ['maxmemory-policy is not noeviction'] },
  ],
  ['keeps an append-only file and never evicts', ['--appendonly', 'yes'], { warn: [] }],
  ['keeps snapshots', ['--save', '3600 1'], { warn: [] }],
  [
    'refuses CONFIG, as managed Redis often does',
    ['--rename-command', 'CONFIG', ''],
    { warn: [], info: ['could not check Redis persistence and eviction'] },
  ],
])('a Redis that %s', (_what, config, expected: { warn: string[]; info?: string[] }) => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start(config);
  });
  afterAll(() => server.stop());

  test(`logs ${expected.warn.length ? expected.warn.join(', ') : 'no warning'}`, async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => lines.push(JSON.parse(line)) },
    );
    const redis = createRedis(server.url, 'settings-test');
    try {
      await checkRedisForQuotas(redis, logger);
    } finally {
      redis.disconnect();
    }
    const messages = (level: number) => lines.filter((l) => l.level === level).map((l) => l.msg);
    expect(messages(40).map((msg) => expected.warn.find((w) => msg.includes(w)))).toEqual(
      expected.warn,
    );
    for (const info of expected.info ?? [])
      expect(messages(30).some((msg) => msg.includes(info))).toBe(true);
  });
});
