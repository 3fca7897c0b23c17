import { PROPAGATION_MS } from '../../support/waits';
import { keyDigest } from '../../../services/gateway/src/keys/api-key';
import { issueKey } from '../../../services/gateway/src/keys/issue-key';
import type { KeyRequest } from '../../../services/gateway/src/keys/issue-key';
import { inProcessGateway, registerInProcess } from '../../support/gateway';

type Gateway = Awaited<ReturnType<typeof inProcessGateway>>;
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Restricted keys, expiry, last use and key events through the gateway (docs/api.md, "Restricted
 * keys" and "Key events and last use"): what operators set is enforced on every keyed route by the
 * deny-by-default guard, kept by a roll, and recorded once.
 */
describe('restricted keys, expiry, last use and key events', () => {
  let gateway: Gateway;
  let emails = 0;

  beforeAll(async () => {
    // No catalog: a catalog route answers 503 once the key, its scope and its unit are settled.
    gateway = await inProcessGateway({
      CATALOG_URL: 'http://127.0.0.1:9',
      KEY_MAX_LIFETIME_DAYS: '30',
    });
  });
  afterAll(() => gateway.close());

  async function operatorKey(request: Partial<KeyRequest> = {}) {
    const issued = await issueKey(
      gateway.deps.keyStore,
      {
        tier: 'enterprise',
        email: `restricted-${(emails += 1)}@example.com`,
        name: 'Restricted',
        useCase: '',
        ...request,
      },
      { maxLifetimeDays: 30 },
    );
    return issued;
  }
  const call = (
    key: string,
    url: string,
    remoteAddress = '10.6.0.1',
    method: 'GET' | 'POST' = 'GET',
  ) => gateway.app.inject({ method, url, headers: { 'x-api-key': key }, remoteAddress });
  const usage = async (key: string, remoteAddress?: string) =>
    (await call(key, '/v1/usage', remoteAddress)).json<Json>().data;

  test('outside its scopes: 403 naming the missing scope, on REST and MCP alike', async () => {
    const { apiKey } = await operatorKey({ scopes: ['usage'] });
    for (const [url, scope] of [
      ['/v1/tools', 'catalog:read'],
      ['/v1/export', 'export'],
      ['/v1/webhooks', 'webhooks'],
    ] as const) {
      const refused = await call(apiKey, url);
      expect([url, refused.statusCode]).toEqual([url, 403]);
      expect(refused.json()).toEqual({
        error: `This key is restricted: it lacks the scope '${scope}' this endpoint needs`,
      });
    }
    const mcp = await gateway.app.inject({
      method: 'POST',
      url: '/v1/mcp',
      headers: {
        'x-api-key': apiKey,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    expect(mcp.statusCode).toBe(403);
    expect(mcp.json().error).toMatch(/lacks the scope 'catalog:read'/);
    const roll = await call(apiKey, '/v1/keys/roll', undefined, 'POST');
    expect(roll.statusCode).toBe(403);
    expect(roll.json().error).toMatch(/lacks the scope 'keys:roll'/);
    // Within them: as any key.
    expect((await usage(apiKey)).scopes).toEqual(['usage']);
  });

  test('no restriction: everything its tier allows', async () => {
    const { apiKey } = await operatorKey();
    expect((await call(apiKey, '/v1/tools')).statusCode).toBe(503);
    expect((await usage(apiKey)).scopes).toBeNull();
  });

  test('from an address not allowed: 403 saying so, and no unit of the quota taken', async () => {
    const { apiKey } = await operatorKey({ allowedAddresses: ['10.6.0.0/16', '2001:db8::/32'] });
    const before = (await usage(apiKey, '10.6.1.2')).used;
    for (const address of ['192.0.2.7', '10.7.0.1', '2001:db9::1']) {
      const refused = await call(apiKey, '/v1/tools', address);
      expect([address, refused.statusCode]).toEqual([address, 403]);
      expect(refused.json()).toEqual({
        error: 'This key is restricted: this address is not allowed to use it',
      });
    }
    expect((await usage(apiKey, '10.6.1.2')).used).toBe(before);
    for (const address of ['10.6.200.3', '::ffff:10.6.0.9', '2001:db8:1::5']) {
      expect([address, (await call(apiKey, '/v1/tools', address)).statusCode]).toEqual([
        address,
        503,
      ]);
    }
  });

  test('a roll keeps the restrictions, may set an end, and is capped by KEY_MAX_LIFETIME_DAYS', async () => {
    const { apiKey, record } = await operatorKey({
      scopes: ['usage', 'keys:roll'],
      allowedAddresses: ['10.6.0.0/16'],
    });
    // Created without an end, a key gets KEY_MAX_LIFETIME_DAYS.
    expect(Date.parse(record.expiresAt!) - Date.now()).toBeGreaterThan(29.9 * 86_400_000);
    const rolled = await gateway.app.inject({
      method: 'POST',
      url: '/v1/keys/roll',
      headers: { 'x-api-key': apiKey },
      payload: { graceSeconds: 0, expiresInSeconds: 3_600 },
      remoteAddress: '10.6.0.1',
    });
    expect(rolled.statusCode).toBe(201);
    const { apiKey: next, expiresAt } = rolled.json<Json>();
    expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(3_590_000);
    expect(Date.parse(expiresAt) - Date.now()).toBeLessThanOrEqual(3_600_000);
    const after = await usage(next, '10.6.0.1');
    expect(after).toMatchObject({
      scopes: ['usage', 'keys:roll'],
      allowedAddresses: ['10.6.0.0/16'],
      expiresAt,
    });
    expect((await call(next, '/v1/usage', '192.0.2.1')).statusCode).toBe(403);
    // Asked for longer than the cap: the cap.
    const long = await gateway.app.inject({
      method: 'POST',
      url: '/v1/keys/roll',
      headers: { 'x-api-key': next },
      payload: { graceSeconds: 0, expiresInSeconds: 90 * 86_400 },
      remoteAddress: '10.6.0.1',
    });
    expect(Date.parse(long.json<Json>().expiresAt) - Date.now()).toBeLessThanOrEqual(
      30 * 86_400_000,
    );
  });

  test('an expired key is 401 saying when, from the instant of its end', async () => {
    const { apiKey, record } = await operatorKey();
    // Ahead by the second a change is given, for the checks before it on a busy machine.
    const expiresAt = new Date(Date.now() + PROPAGATION_MS).toISOString();
    const updated = await gateway.deps.keyStore.update(record.id, { expiresAt });
    await gateway.deps.announceKeyChange(updated!);
    expect((await call(apiKey, '/v1/usage')).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Date.parse(expiresAt) - Date.now() + 1));
    const refused = await call(apiKey, '/v1/usage');
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toEqual({ error: `The API key is invalid: it expired at ${expiresAt}` });
  });

  test('key events: every change once, by whom and from where, newest first; free of quota', async () => {
    const key = await registerInProcess(gateway.app, `events-${(emails += 1)}@example.com`);
    const rolled = await gateway.app.inject({
      method: 'POST',
      url: '/v1/keys/roll',
      headers: { 'x-api-key': key },
      payload: { graceSeconds: 60 },
      remoteAddress: '10.6.3.3',
    });
    const { apiKey, keyId } = rolled.json<Json>();
    const restricted = await gateway.deps.keyStore.update(keyId, { scopes: ['usage'] });
    await gateway.deps.keyStore.update(keyId, { scopes: ['usage'] });
    await gateway.deps.keyStore.update(keyId, { tier: 'pro' });
    await gateway.deps.announceKeyChange(restricted!);
    const before = (await usage(apiKey)).used;
    const listed = await call(apiKey, '/v1/keys/events');
    expect(listed.statusCode).toBe(200);
    const events = listed.json<Json>().data as Json[];
    expect(events.map((e) => [e.type, e.by])).toEqual([
      ['tier_changed', 'operator'],
      ['restricted', 'operator'],
      ['rolled', 'self'],
      ['created', 'self'],
    ]);
    expect(events[0]).toMatchObject({ detail: { from: 'free', to: 'pro' }, address: null });
    expect(events[1]!.detail).toEqual({ scopes: ['usage'] });
    expect(events[2]).toMatchObject({
      address: '10.6.3.3',
      detail: { previousKeyExpiresAt: expect.any(String) },
    });
    expect(listed.headers['x-ratelimit-limit']).toBeDefined();
    expect((await usage(apiKey)).used).toBe(before);
    // The previous secret may read them (it is not a change of the key).
    expect((await call(key, '/v1/keys/events')).statusCode).toBe(200);
  });

  test('last use: noted per request, written once a minute, shown by /v1/usage', async () => {
    const { apiKey, record } = await operatorKey();
    expect((await usage(apiKey)).lastUsedAt).toBeNull();
    const minuteOf = (ms: number) => new Date(ms - (ms % 60_000)).toISOString();
    const earliest = minuteOf(Date.now());
    await call(apiKey, '/v1/tools');
    const minute = (await usage(apiKey)).lastUsedAt as string;
    // The minute of the request (a minute may have turned meanwhile).
    expect([earliest, minuteOf(Date.now())]).toContain(minute);
    // Written by the next flush; the same minute again is no write.
    const written = await gateway.deps.keyStore.recordUse(gateway.deps.lastUse.take());
    expect(written).toBeGreaterThanOrEqual(1);
    expect((await gateway.deps.keyStore.find(record.id))?.lastUsedAt).toBe(minute);
    expect(await gateway.deps.keyStore.recordUse([{ keyId: record.id, minute }])).toBe(0);
    expect((await gateway.deps.keyStore.findByDigest(keyDigest(apiKey)))?.record.lastUsedAt).toBe(
      minute,
    );
  });
});
