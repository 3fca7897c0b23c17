import { RedisServer } from '../support/redis-server';
import { waitFor } from '../support/ports';
import { ServiceProcess, keysCli, registerKey, tempDataDir } from '../support/services';

interface KeySummary {
  apiKey?: string;
  keyId: string;
  tier: string;
  status: string;
}

/**
 * SPEC B2: a key created, revoked or re-tiered with `npm run keys` takes effect on the running
 * system within one second: through Redis pub/sub when Redis is there, through the local change
 * feed under DATA_DIR otherwise.
 */
describe.each([
  ['with Redis pub/sub', true],
  ['with the local change feed under DATA_DIR', false],
])('key changes from the CLI reach a running gateway %s', (_name, withRedis) => {
  let redis: RedisServer | undefined;
  let catalog: ServiceProcess;
  let gateway: ServiceProcess;
  let storeEnv: Record<string, string>;

  beforeAll(async () => {
    redis = withRedis ? await RedisServer.start() : undefined;
    storeEnv = { DATA_DIR: tempDataDir(), ...(redis ? { REDIS_URL: redis.url } : {}) };
    catalog = await ServiceProcess.start('catalog', {});
    gateway = await ServiceProcess.start('gateway', {
      CATALOG_URL: catalog.url,
      REGISTRATIONS_PER_HOUR: '1000',
      ...storeEnv,
    });
  });

  afterAll(async () => {
    await Promise.all([gateway.stop(), catalog.stop()]);
    await redis?.stop();
  });

  const status = async (key: string, path = '/v1/categories') => {
    const response = await fetch(`${gateway.url}${path}`, { headers: { 'x-api-key': key } });
    await response.arrayBuffer();
    return response.status;
  };

  /** Polls until the status changes; the change must land within one second. */
  async function expectWithinOneSecond(probe: () => Promise<number>, expected: number) {
    const started = Date.now();
    await waitFor(async () => ((await probe()) === expected ? true : undefined), {
      timeoutMs: 3_000,
      intervalMs: 20,
      what: `status ${expected}`,
    });
    expect(Date.now() - started).toBeLessThan(1_000);
  }

  test('revoke, by key or by id', async () => {
    const key = await registerKey(gateway.url);
    expect(await status(key)).toBe(200);
    const revoked = (await keysCli(['revoke', key], storeEnv)) as KeySummary;
    expect(revoked.status).toBe('revoked');
    await expectWithinOneSecond(() => status(key), 401);

    const other = await registerKey(gateway.url);
    expect(await status(other)).toBe(200);
    const listed = (await keysCli(['list'], storeEnv)) as KeySummary[];
    const id = listed.filter((k) => k.status === 'active').at(-1)!.keyId;
    await keysCli(['revoke', id], storeEnv);
    await expectWithinOneSecond(() => status(other), 401);
  });

  test('set-tier opens /compare to a former Free key', async () => {
    const key = await registerKey(gateway.url);
    const compare = () => status(key, '/v1/compare/langchain/llamaindex');
    expect(await compare()).toBe(403);
    const updated = (await keysCli(['set-tier', key, 'pro'], storeEnv)) as KeySummary;
    expect(updated.tier).toBe('pro');
    await expectWithinOneSecond(compare, 200);
    const response = await fetch(`${gateway.url}/v1/categories`, { headers: { 'x-api-key': key } });
    expect(response.headers.get('x-ratelimit-limit')).toBe('5000');
  });

  test('a key created by the CLI works at once, and its JSON names the key and tier', async () => {
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
    await expectWithinOneSecond(() => status(created.apiKey!), 200);
  });
});
