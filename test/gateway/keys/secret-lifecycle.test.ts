import { crc32 } from 'node:zlib';
import { generateApiKey, keyDigest } from '../../../services/gateway/src/keys/api-key';
import { secretState } from '../../../services/gateway/src/keys/secret-lifecycle';
import { inProcessGateway, registerInProcess } from '../../support/gateway';
import { keyRecord } from '../../support/key-record';

type Gateway = Awaited<ReturnType<typeof inProcessGateway>>;

/**
 * A secret's lifecycle through the gateway (docs/security.md, "The lifecycle of a secret"): only
 * the current secret manages its key, rolls are serialized, and a secret that ended says why and
 * is never taken for an unknown key.
 */
describe('the lifecycle of a secret', () => {
  let gateway: Gateway;
  let storeLookups: jest.SpyInstance;
  let emails = 0;

  beforeAll(async () => {
    // No catalog: an unknown path asked with a key checks the key and answers 404.
    gateway = await inProcessGateway({
      INVALID_KEYS_PER_MINUTE: '3',
      CATALOG_URL: 'http://127.0.0.1:9',
    });
    storeLookups = jest.spyOn(gateway.deps.keyStore, 'findByDigest');
  });
  afterAll(() => gateway.close());

  const register = () => registerInProcess(gateway.app, `lifecycle-${(emails += 1)}@example.com`);
  const use = (key: string, remoteAddress = '10.7.0.1') =>
    gateway.app.inject({ url: '/nothing-here', headers: { 'x-api-key': key }, remoteAddress });
  const roll = (key: string, graceSeconds?: number) =>
    gateway.app.inject({
      method: 'POST',
      url: '/v1/keys/roll',
      headers: { 'x-api-key': key },
      ...(graceSeconds === undefined ? {} : { payload: { graceSeconds } }),
    });

  test('a leaked secret cannot roll its key away from the owner who rolled it first', async () => {
    const leaked = await register();
    const owner = await roll(leaked, 3_600);
    expect(owner.statusCode).toBe(201);
    const { apiKey: current, previousKeyExpiresAt } = owner.json<{
      apiKey: string;
      previousKeyExpiresAt: string;
    }>();

    const takeover = await roll(leaked, 0);
    expect(takeover.statusCode).toBe(403);
    expect(takeover.json()).toEqual({
      error: `This secret is being replaced (it works until ${previousKeyExpiresAt}) and cannot manage the key; use the key's current secret`,
    });
    // The owner's secret still manages the key, and the old one still works in its grace.
    expect((await use(current)).statusCode).toBe(404);
    expect((await use(leaked)).statusCode).toBe(404);
    expect((await roll(current, 0)).statusCode).toBe(201);
  });

  test('of concurrent rolls from one secret exactly one answers 201; the others 401 or 409', async () => {
    const key = await register();
    const rolls = await Promise.all(Array.from({ length: 6 }, () => roll(key, 0)));
    const statuses = rolls.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    for (const status of statuses) expect([201, 401, 409]).toContain(status);
    const winner = rolls.find((r) => r.statusCode === 201)!.json<{ apiKey: string }>().apiKey;
    expect((await use(winner)).statusCode).toBe(404);
    for (const lost of rolls.filter((r) => r.statusCode === 401)) {
      expect(lost.json().error).toMatch(/^The API key is invalid: it was replaced by a roll at /);
    }
  });

  test('a rolled-away secret says so, never counts as unknown, and never locks out its successor', async () => {
    const old = await register();
    const rolled = await roll(old, 0);
    const successor = rolled.json<{ apiKey: string }>().apiKey;
    storeLookups.mockClear();
    // Ten times the address's limit of unknown keys.
    for (let i = 0; i < 30; i++) {
      const response = await use(old, '10.7.0.2');
      expect(response.statusCode).toBe(401);
      expect(response.json().error).toMatch(
        /^The API key is invalid: it was replaced by a roll at \d{4}-\d\d-\d\dT[\d:.]+Z; use the key's current secret$/,
      );
    }
    // Looked up once, then known: retrying an old secret costs no store lookups.
    expect(storeLookups).toHaveBeenCalledTimes(1);
    expect((await use(successor, '10.7.0.2')).statusCode).toBe(404);
    // Another key this gateway has not seen yet, from the same address, is looked up and let in.
    expect((await use(await register(), '10.7.0.2')).statusCode).toBe(404);
    // Unknown keys still count: three are let through to the store, the fourth is refused.
    for (let i = 0; i < 3; i++)
      expect((await use(generateApiKey(), '10.7.0.2')).statusCode).toBe(401);
    expect((await use(generateApiKey(), '10.7.0.2')).statusCode).toBe(429);
  });

  test('a revoked secret says when; the previous secret of a revoked key too', async () => {
    const old = await register();
    const current = (await roll(old, 3_600)).json<{ apiKey: string; keyId: string }>();
    const revokedAt = new Date().toISOString();
    const record = await gateway.deps.keyStore.update(current.keyId, { revokedAt });
    await gateway.deps.announceKeyChange(record!);
    for (const key of [current.apiKey, old]) {
      const response = await use(key);
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({
        error: `The API key is invalid: it was revoked at ${revokedAt}`,
      });
      expect(response.headers['www-authenticate']).toMatch(/^ApiKey /);
    }
  });

  test('a secret of our shape whose checksum fails is refused without a store lookup', async () => {
    const key = generateApiKey();
    const last = key.at(-1) === 'a' ? 'b' : 'a';
    storeLookups.mockClear();
    for (const bad of [`${key.slice(0, -1)}${last}`, `${key.slice(0, 12)}X${key.slice(13)}`]) {
      const response = await use(bad, '10.7.0.3');
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({ error: 'The API key is invalid' });
    }
    expect(storeLookups).not.toHaveBeenCalled();
  });

  test('new secrets carry the CRC-32 of everything before the checksum; secrets issued before keep working', async () => {
    const key = await register();
    const decoded = [...key.slice(-6)].reduce(
      (n, c) =>
        n * 62 + '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'.indexOf(c),
      0,
    );
    expect(decoded).toBe(crc32(key.slice(0, -6)));
    // A secret of the earlier format: its checksum over the random part alone.
    const random = key.slice(4, 36);
    let sum = crc32(random);
    let checksum = '';
    for (let i = 0; i < 6; i++) {
      checksum =
        '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'[sum % 62] + checksum;
      sum = Math.floor(sum / 62);
    }
    const earlier = `tdk_${random}${checksum}`;
    await gateway.deps.keyStore.create(keyRecord({ digest: keyDigest(earlier) }));
    expect((await use(earlier)).statusCode).toBe(404);
  });
});

describe('secretState: the one answer of what a secret is now', () => {
  const at = '2026-05-01T12:00:00.000Z';
  const record = keyRecord({
    id: 'key_1',
    digest: 'cur',
    tier: 'pro',
    createdAt: at,
    previousDigest: 'prev',
    previousExpiresAt: '2026-05-01T13:00:00.000Z',
  });
  const now = Date.parse(at);

  test('current, previous until its grace ends, then replaced by the roll', () => {
    expect(secretState({ record, ended: null }, 'cur', now)).toEqual({ kind: 'current' });
    expect(secretState({ record, ended: null }, 'prev', now)).toEqual({
      kind: 'previous',
      until: record.previousExpiresAt,
    });
    expect(secretState({ record, ended: null }, 'prev', now + 3_600_000)).toEqual({
      kind: 'ended',
      reason: 'rolled',
      at: record.previousExpiresAt,
      url: null,
    });
  });

  test("a key's end or revocation ends its current and previous secret; an ended one keeps its reason", () => {
    const expiring = { ...record, expiresAt: '2026-05-01T12:30:00.000Z' };
    for (const digest of ['cur', 'prev']) {
      expect(secretState({ record: expiring, ended: null }, digest, now)).toMatchObject({
        kind: digest === 'cur' ? 'current' : 'previous',
      });
      expect(secretState({ record: expiring, ended: null }, digest, now + 1_800_000)).toEqual({
        kind: 'ended',
        reason: 'expired',
        at: expiring.expiresAt,
        url: null,
      });
    }
    const leaked = { ...record, revokedAt: at, revokedReason: 'leaked' as const, revokedUrl: 'u' };
    expect(secretState({ record: leaked, ended: null }, 'cur', now)).toEqual({
      kind: 'ended',
      reason: 'leaked',
      at,
      url: 'u',
    });
    const ended = { digest: 'old', reason: 'rolled' as const, at, url: null };
    expect(secretState({ record: leaked, ended }, 'old', now)).toEqual({
      kind: 'ended',
      reason: 'rolled',
      at,
      url: null,
    });
  });
});
