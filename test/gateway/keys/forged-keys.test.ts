import { generateApiKey, keyDigest } from '../../../services/gateway/src/keys/api-key';
import { KeyCache } from '../../../services/gateway/src/keys/key-cache';
import type { KeyStore } from '../../../services/gateway/src/keys/key-store';
import { addressGroup } from '../../../services/gateway/src/plugins/client-address';
import { inProcessGateway, registerInProcess } from '../../support/gateway';
import { keyRecord } from '../../support/key-record';

const MINUTE_MS = 60_000;

/**
 * The key checksum is public, so anyone can mint well-formed keys that were never issued. Each
 * unknown one costs a store lookup: they are limited per client address, and a flood of them
 * never pushes real keys out of the key cache.
 */
describe('forged well-formed keys', () => {
  let now = Date.UTC(2026, 0, 5, 12, 0, 0);
  let gateway: Awaited<ReturnType<typeof inProcessGateway>>;
  let storeLookups: jest.SpyInstance;

  beforeAll(async () => {
    gateway = await inProcessGateway(
      { INVALID_KEYS_PER_MINUTE: '3', CATALOG_URL: 'http://127.0.0.1:9' },
      () => now,
    );
    storeLookups = jest.spyOn(gateway.deps.keyStore, 'findByDigest');
  });
  afterAll(() => gateway.close());

  // An unknown path asked with a key: the key is checked, and no catalog is needed.
  const call = (key: string, remoteAddress: string) =>
    gateway.app.inject({ url: '/nothing-here', headers: { 'x-api-key': key }, remoteAddress });

  test('past the limit an address gets 429 without a lookup; valid keys still pass', async () => {
    const valid = await registerInProcess(gateway.app, 'forged-keys@example.com');
    expect((await call(valid, '10.9.0.1')).statusCode).toBe(404);

    const forged = [generateApiKey(), generateApiKey()];
    storeLookups.mockClear();
    // The same unknown key twice counts twice, the second time answered from the cache.
    for (const key of [forged[0]!, forged[1]!, forged[1]!]) {
      const response = await call(key, '10.9.0.1');
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({ error: 'The API key is invalid' });
    }
    expect(storeLookups).toHaveBeenCalledTimes(2);

    const refused = await call(generateApiKey(), '10.9.0.1');
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({
      error: 'Too many invalid API keys from this address; at most 3 a minute',
    });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect((await call(forged[0]!, '10.9.0.1')).statusCode).toBe(429);
    expect(storeLookups).toHaveBeenCalledTimes(2);

    // A key the gateway knows is not held up by its neighbours' mistakes...
    const known = await call(valid, '10.9.0.1');
    expect(known.statusCode).toBe(404);
    expect(known.headers['x-ratelimit-limit']).toBe('100');
    // ...another address has its own count...
    expect((await call(generateApiKey(), '10.9.0.2')).statusCode).toBe(401);
    // ...and the next minute starts a new one.
    now += MINUTE_MS;
    expect((await call(generateApiKey(), '10.9.0.1')).statusCode).toBe(401);
  });

  // Addresses of one client in turn, up to the limit; then the same client again, and another.
  test.each([
    [
      'an IPv6 client is counted by its /64: a new address in it does not start afresh',
      ['2001:db8:5:7::1', '2001:db8:5:7::2', '2001:db8:5:7:a:b:c:d'],
      '2001:db8:5:7:ffff::9',
      '2001:db8:5:8::1',
    ],
    [
      'an IPv4 client reaching a dual-stack socket is one client with its IPv4 address',
      ['10.9.0.7', '::ffff:10.9.0.7', '10.9.0.7'],
      '::ffff:10.9.0.7',
      '10.9.0.8',
    ],
  ])('%s', async (_name, addresses, sameClient, otherClient) => {
    now += MINUTE_MS;
    for (const address of addresses)
      expect((await call(generateApiKey(), address)).statusCode).toBe(401);
    expect((await call(generateApiKey(), sameClient)).statusCode).toBe(429);
    expect((await call(generateApiKey(), otherClient)).statusCode).toBe(401);
  });
});

describe('the address a client is counted by', () => {
  test.each([
    ['203.0.113.9', '203.0.113.9'],
    ['2001:db8:a:b:1:2:3:4', '2001:db8:a:b::/64'],
    ['2001:0db8:000a:000b::ffff', '2001:db8:a:b::/64'],
    ['::ffff:203.0.113.9', '203.0.113.9'],
    ['::1', '0:0:0:0::/64'],
    ['unknown', 'unknown'],
  ])('%s is counted as %s', (address, group) => {
    expect(addressGroup(address)).toBe(group);
  });
});

describe('the key cache', () => {
  const record = (digest: string) => keyRecord({ digest, createdAt: new Date(0).toISOString() });

  test('"no such key" entries never push real keys out', async () => {
    const real = [keyDigest(generateApiKey()), keyDigest(generateApiKey())];
    const findByDigest = jest.fn(async (digest: string) =>
      real.includes(digest) ? { record: record(digest), ended: null } : null,
    );
    const cache = new KeyCache({ findByDigest } as unknown as KeyStore, {
      ttlMs: MINUTE_MS,
      maxEntries: 2,
    });
    for (const digest of real)
      expect(await cache.lookup(digest)).toMatchObject({ record: { digest } });

    for (let i = 0; i < 100; i++)
      expect(await cache.lookup(keyDigest(generateApiKey()))).toBeNull();

    findByDigest.mockClear();
    for (const digest of real) expect(cache.lookup(digest)).toMatchObject({ record: { digest } });
    expect(findByDigest).not.toHaveBeenCalled();
  });

  test('a "no such key" answer is cached, and dropped when the key is announced', async () => {
    const digest = keyDigest(generateApiKey());
    let issued = false;
    const findByDigest = jest.fn(async (d: string) =>
      issued ? { record: record(d), ended: null } : null,
    );
    const cache = new KeyCache({ findByDigest } as unknown as KeyStore, { ttlMs: MINUTE_MS });
    expect(await cache.lookup(digest)).toBeNull();
    expect(cache.lookup(digest)).toBeNull();
    expect(findByDigest).toHaveBeenCalledTimes(1);

    issued = true;
    cache.invalidate(digest);
    expect(await cache.lookup(digest)).toMatchObject({ record: { digest } });
  });
});
