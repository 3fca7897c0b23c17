import { RedisServer } from '../support/redis-server';
import { scanningProvider } from '../support/secret-scanning';
import { waitFor } from '../support/ports';
import {
  KEYS_CLI,
  ServiceProcess,
  keyedGet,
  keysCli,
  runCli,
  tempDataDir,
} from '../support/services';
import { PROPAGATION_MS, within } from '../support/waits';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Key roll through the running system (two gateways on one key store), on the embedded stack and
 * with Redis: the new secret works at once, the old one until its grace ends, on every replica;
 * the key id, tier, quota count of the day and webhook subscriptions stay; rolling again ends
 * the earlier grace at once, and `graceSeconds: 0` is a revocation of the old secret, on every
 * replica within a second, also while Redis is down.
 */
describe.each([
  ['the embedded stack', false],
  ['Redis', true],
])('key roll on %s', (_name, withRedis) => {
  let redis: RedisServer | undefined;
  let catalog: ServiceProcess;
  const gateways: ServiceProcess[] = [];
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };
  const scanner = scanningProvider();

  beforeAll(async () => {
    redis = withRedis ? await RedisServer.start() : undefined;
    if (redis) env.REDIS_URL = redis.url;
    catalog = await ServiceProcess.start('catalog', {
      ...env,
      DATA_DIR: tempDataDir(),
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    for (let i = 0; i < 2; i++) {
      gateways.push(
        await ServiceProcess.start('gateway', {
          ...env,
          CATALOG_URL: catalog.url,
          SECRET_SCANNING_PUBLIC_KEYS: scanner.publicKeysFile,
        }),
      );
    }
  }, 60_000);
  afterAll(async () => {
    await Promise.all([...gateways.map((g) => g.stop()), catalog.stop()]);
    await redis?.stop();
  });

  let emails = 0;
  async function newKey(tier: 'pro' | 'enterprise' = 'pro'): Promise<string> {
    emails += 1;
    const created = (await keysCli(
      ['create', '--tier', tier, '--email', `roll${emails}@example.com`, '--name', 'Roll'],
      env,
    )) as { apiKey: string };
    return created.apiKey;
  }

  async function roll(key: string, body?: unknown, gateway = gateways[0]!) {
    const response = await fetch(`${gateway.url}/v1/keys/roll`, {
      method: 'POST',
      headers: {
        'x-api-key': key,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return {
      status: response.status,
      headers: response.headers,
      body: (await response.json()) as Json,
    };
  }

  const status = async (gateway: ServiceProcess, key: string) =>
    (await keyedGet(gateway.url, key, '/v1/categories')).status;

  /**
   * Every replica answers `expected` for `key` within a second of `since`, probed every 20 ms. A
   * CLI's change counts from the CLI's exit: it was stored and announced before, and the CLI's own
   * start (hundreds of milliseconds on a busy machine) is not the time the change takes to spread.
   */
  async function everyReplica(key: string, expected: number, since: number) {
    for (const gateway of gateways) {
      let lastMiss = since;
      await waitFor(
        async () => {
          const sentAt = Date.now();
          if ((await status(gateway, key)) === expected) return true;
          lastMiss = sentAt;
          return undefined;
        },
        {
          timeoutMs: within(PROPAGATION_MS),
          intervalMs: 20,
          what: `${expected} from ${gateway.url}`,
        },
      );
      expect(lastMiss - since).toBeLessThan(PROPAGATION_MS);
    }
  }

  test('201 with a new key for the same key id and tier; both secrets work during the grace', async () => {
    const old = await newKey();
    for (const gateway of gateways) expect(await status(gateway, old)).toBe(200);
    const rolled = await roll(old, { graceSeconds: 3_600 });
    expect(rolled.status).toBe(201);
    expect(rolled.body).toEqual({
      apiKey: expect.stringMatching(/^tdk_[0-9A-Za-z]{38}$/),
      keyId: expect.stringMatching(/^key_/),
      tier: 'pro',
      previousKeyExpiresAt: expect.any(String),
      expiresAt: null,
    });
    const grace = Date.parse(rolled.body.previousKeyExpiresAt) - Date.now();
    expect(grace).toBeGreaterThan(3_590_000);
    expect(grace).toBeLessThanOrEqual(3_600_000);
    // The roll is a keyed request like any other: its rate-limit headers are the key's.
    expect(rolled.headers.get('x-ratelimit-limit')).toBe('5000');
    for (const gateway of gateways) {
      expect(await status(gateway, rolled.body.apiKey)).toBe(200);
      expect(await status(gateway, old)).toBe(200);
    }
  });

  test('the quota count of the day and the key id stay: the new secret continues the count', async () => {
    const old = await newKey();
    const before = await keyedGet(gateways[0]!.url, old, '/v1/categories');
    const remaining = Number(before.headers.get('x-ratelimit-remaining'));
    const rolled = await roll(old);
    // The default grace: a day.
    expect(Date.parse(rolled.body.previousKeyExpiresAt) - Date.now()).toBeGreaterThan(86_390_000);
    // The same replica: without Redis each replica counts on its own.
    const after = await keyedGet(gateways[0]!.url, rolled.body.apiKey, '/v1/usage');
    // One unit for the roll itself; /v1/usage takes none.
    expect(Number(after.headers.get('x-ratelimit-remaining'))).toBe(remaining - 1);
    expect(after.body.data.keyId).toBe(rolled.body.keyId);
    expect(after.body.data.used).toBe(2);
  });

  test('graceSeconds 0: the old secret is refused by every replica within a second', async () => {
    const leaked = await newKey();
    for (const gateway of gateways) expect(await status(gateway, leaked)).toBe(200);
    const since = Date.now();
    const rolled = await roll(leaked, { graceSeconds: 0 });
    expect(rolled.status).toBe(201);
    expect(Date.parse(rolled.body.previousKeyExpiresAt)).toBeLessThanOrEqual(Date.now());
    await everyReplica(leaked, 401, since);
    for (const gateway of gateways) expect(await status(gateway, rolled.body.apiKey)).toBe(200);
  });

  test('rolling again ends the earlier grace at once, on every replica', async () => {
    const first = await newKey();
    const second = (await roll(first, { graceSeconds: 3_600 })).body.apiKey as string;
    for (const gateway of gateways) expect(await status(gateway, first)).toBe(200);
    const since = Date.now();
    const third = (await roll(second, { graceSeconds: 3_600 }, gateways[1])).body.apiKey as string;
    await everyReplica(first, 401, since);
    for (const gateway of gateways) {
      expect(await status(gateway, second)).toBe(200);
      expect(await status(gateway, third)).toBe(200);
    }
  });

  test('a leaked secret cannot roll the key away from its owner, whichever replica it asks', async () => {
    const leaked = await newKey();
    for (const gateway of gateways) expect(await status(gateway, leaked)).toBe(200);
    const owner = await roll(leaked, { graceSeconds: 3_600 });
    expect(owner.status).toBe(201);
    // At once, on the other replica, which may still hold the leaked secret as current.
    const takeover = await roll(leaked, { graceSeconds: 0 }, gateways[1]);
    expect(takeover.status).toBe(403);
    expect(takeover.body.error).toMatch(
      /^This secret is being replaced .*use the key's current secret$/,
    );
    // Past the second in which every replica applies a change: the owner's secret still works.
    await new Promise((resolve) => setTimeout(resolve, 2 * PROPAGATION_MS));
    for (const gateway of gateways) expect(await status(gateway, owner.body.apiKey)).toBe(200);
  });

  test('a client retrying a rolled-away secret never locks out its successor', async () => {
    const old = await newKey();
    const since = Date.now();
    const rolled = await roll(old, { graceSeconds: 0 });
    await everyReplica(old, 401, since);
    // More than INVALID_KEYS_PER_MINUTE (30) retries of the old secret, from one address.
    for (let i = 0; i < 35; i++) {
      const retried = await keyedGet(gateways[1]!.url, old, '/v1/categories');
      expect(retried.status).toBe(401);
      expect(retried.body.error).toMatch(/replaced by a roll/);
    }
    expect(await status(gateways[1]!, rolled.body.apiKey)).toBe(200);
    expect(await status(gateways[1]!, await newKey())).toBe(200);
  });

  test('a signed leak report ends the secret on every replica within a second, saying why', async () => {
    const leaked = await newKey();
    for (const gateway of gateways) expect(await status(gateway, leaked)).toBe(200);
    const url = 'https://gist.github.com/octo/leak';
    const report = scanner.report([leaked], url);
    const since = Date.now();
    const response = await fetch(`${gateways[0]!.url}/v1/keys/leaks`, {
      method: 'POST',
      headers: report.headers,
      body: report.body,
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as Json[])[0]!.label).toBe('true_positive');
    await everyReplica(leaked, 401, since);
    const refused = await keyedGet(gateways[1]!.url, leaked, '/v1/categories');
    expect(refused.body.error).toBe(
      `The API key is invalid: it was revoked because it was reported leaked at ${url}`,
    );
    const listed = (await keysCli(['list'], env)) as Json[];
    expect(listed.find((k) => k.revokedUrl === url)).toMatchObject({
      status: 'revoked',
      revokedReason: 'leaked',
    });
  });

  test("an operator's restriction reaches every replica within a second; a roll keeps it", async () => {
    const key = await newKey();
    for (const gateway of gateways) expect(await status(gateway, key)).toBe(200);
    const restricted = await runCli(KEYS_CLI, ['update', key, '--scopes', 'usage,keys:roll'], env);
    const since = Date.now();
    expect(restricted.code).toBe(0);
    await everyReplica(key, 403, since);
    const refused = await keyedGet(gateways[1]!.url, key, '/v1/categories');
    expect(refused.body.error).toMatch(/lacks the scope 'catalog:read'/);
    const rolled = await roll(key, { graceSeconds: 0 });
    expect(rolled.status).toBe(201);
    for (const gateway of gateways) expect(await status(gateway, rolled.body.apiKey)).toBe(403);
    const events = (await keysCli(['events', rolled.body.keyId], env)) as Json[];
    expect(events.map((e) => [e.type, e.by])).toEqual([
      ['rolled', 'self'],
      ['restricted', 'operator'],
      ['created', 'operator'],
    ]);
  });

  test('an expired secret is refused by every replica within a second of its end', async () => {
    const key = await newKey();
    // Far enough ahead for the CLI to run and every replica to learn it first, on a busy machine.
    const end = Date.now() + within(PROPAGATION_MS);
    const expiresAt = new Date(end).toISOString();
    const set = await runCli(KEYS_CLI, ['update', key, '--expires-at', expiresAt], env);
    expect(set.code).toBe(0);
    for (const gateway of gateways) expect(await status(gateway, key)).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, end - Date.now())));
    await everyReplica(key, 401, end);
    const refused = await keyedGet(gateways[0]!.url, key, '/v1/categories');
    expect(refused.body.error).toBe(`The API key is invalid: it expired at ${expiresAt}`);
  });

  test('webhook subscriptions belong to the key id: the new secret lists them', async () => {
    const old = await newKey('enterprise');
    const created = await fetch(`${gateways[0]!.url}/v1/webhooks`, {
      method: 'POST',
      headers: { 'x-api-key': old, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://127.0.0.1:9/roll', events: ['tool.created'] }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const rolled = await roll(old, { graceSeconds: 0 });
    const listed = await keyedGet(gateways[1]!.url, rolled.body.apiKey, '/v1/webhooks');
    expect(listed.body.data.map((w: { id: string }) => w.id)).toEqual([id]);
  });

  test('bad input: 400 naming the field, 415, 413; no key, an invalid or rolled-out one: 401', async () => {
    const key = await newKey();
    for (const graceSeconds of [-1, 604_801, 1.5, '60']) {
      const refused = await roll(key, { graceSeconds });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toContain('graceSeconds');
    }
    const notJson = await fetch(`${gateways[0]!.url}/v1/keys/roll`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'text/plain' },
      body: 'grace',
    });
    expect(notJson.status).toBe(415);
    const big = await roll(key, { graceSeconds: 60, padding: 'x'.repeat(2_000) });
    expect(big.status).toBe(413);
    const noKey = await fetch(`${gateways[0]!.url}/v1/keys/roll`, { method: 'POST' });
    expect(noKey.status).toBe(401);
    expect((await roll(`tdk_${'A'.repeat(38)}`)).status).toBe(401);
  });

  test('the CLI rolls by the key or its id, and the change reaches every replica', async () => {
    const old = await newKey();
    const result = await runCli(KEYS_CLI, ['roll', old, '--grace-seconds', '0'], env);
    const since = Date.now();
    expect(result.code).toBe(0);
    const rolled = JSON.parse(result.stdout) as Json;
    expect(rolled).toMatchObject({
      tier: 'pro',
      status: 'active',
      previousKeyExpiresAt: expect.any(String),
    });
    await everyReplica(old, 401, since);
    for (const gateway of gateways) expect(await status(gateway, rolled.apiKey)).toBe(200);
    const byId = await runCli(KEYS_CLI, ['roll', rolled.keyId], env);
    expect(JSON.parse(byId.stdout)).toMatchObject({ keyId: rolled.keyId });
    const revoked = await runCli(KEYS_CLI, ['revoke', rolled.keyId], env);
    expect(revoked.code).toBe(0);
    const again = await runCli(KEYS_CLI, ['roll', rolled.keyId], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('revoked');
  });

  if (withRedis) {
    test('while Redis is down, a roll still takes effect on every replica within a second', async () => {
      const leaked = await newKey();
      for (const gateway of gateways) expect(await status(gateway, leaked)).toBe(200);
      await redis!.stop();
      try {
        const since = Date.now();
        const rolled = await roll(leaked, { graceSeconds: 0 });
        expect(rolled.status).toBe(201);
        await everyReplica(leaked, 401, since);
        for (const gateway of gateways) expect(await status(gateway, rolled.body.apiKey)).toBe(200);
        // A leak report too.
        const leak = scanner.report([rolled.body.apiKey]);
        const reported = await fetch(`${gateways[1]!.url}/v1/keys/leaks`, {
          method: 'POST',
          headers: leak.headers,
          body: leak.body,
        });
        expect(reported.status).toBe(200);
        await everyReplica(rolled.body.apiKey, 401, Date.now());
      } finally {
        await redis!.restart();
      }
    });
  }
});
