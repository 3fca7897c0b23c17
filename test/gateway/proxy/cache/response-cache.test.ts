import {
  type CachedAnswer,
  ResponseCache,
  cacheKey,
} from '../../../../services/gateway/src/proxy/cache/response-cache';

const answer = (version: number, body = 'x'): CachedAnswer => ({
  version,
  headers: [['content-type', 'application/json']],
  vary: undefined,
  etag: `"v${version}"`,
  body: Buffer.from(body),
});

function cache(options: Partial<ConstructorParameters<typeof ResponseCache>[0]> = {}) {
  let evictions = 0;
  const created = new ResponseCache({
    maxBytes: 100_000,
    maxEntryBytes: 500,
    ttlMs: 0,
    onEvict: () => (evictions += 1),
    ...options,
  });
  return { cache: created, evictions: () => evictions };
}

describe('cacheKey', () => {
  test('the order of query parameters does not matter, the values of one parameter keep theirs', () => {
    expect(cacheKey('free', '/v1/tools?limit=20&category=llm', 'gzip')).toBe(
      cacheKey('free', '/v1/tools?category=llm&limit=20', 'gzip'),
    );
    expect(cacheKey('free', '/v1/tools?tag=a&tag=b', undefined)).not.toBe(
      cacheKey('free', '/v1/tools?tag=b&tag=a', undefined),
    );
  });

  test('tiers, paths and encodings are kept apart', () => {
    const keys = new Set([
      cacheKey('free', '/v1/tools', undefined),
      cacheKey('pro', '/v1/tools', undefined),
      cacheKey('free', '/v1/tools', 'gzip'),
      cacheKey('free', '/v1/tools', 'br'),
      cacheKey('free', '/v1/tools?limit=2', undefined),
      cacheKey('free', '/v1/tool', 's'),
    ]);
    expect(keys.size).toBe(6);
  });
});

describe('ResponseCache', () => {
  test('serves an entry only while its version is the newest known', () => {
    const { cache: c } = cache();
    c.set('k', answer(3));
    expect(c.get('k')?.version).toBe(3);
    c.observe(2); // older news changes nothing
    expect(c.get('k')?.version).toBe(3);
    c.observe(4); // announced: version 3 is no longer served
    expect(c.get('k')).toBeUndefined();
    c.set('k', answer(4));
    expect(c.get('k')?.version).toBe(4);
  });

  test('an answer older than the newest version known is not kept', () => {
    const { cache: c } = cache();
    c.observe(5);
    c.set('k', answer(4));
    expect(c.get('k')).toBeUndefined();
    expect(c.version).toBe(5);
  });

  test('a newer answer moves every other entry out of service', () => {
    const { cache: c } = cache();
    c.set('a', answer(1));
    c.set('b', answer(2));
    expect(c.get('a')).toBeUndefined();
    expect(c.get('b')?.version).toBe(2);
  });

  test('a key is admitted from its second miss on, and forgetting forgets that too', () => {
    const { cache: c } = cache();
    expect(c.admit('k')).toBe(false);
    expect(c.admit('k')).toBe(true);
    expect(c.admit('other')).toBe(false);
    c.forget();
    expect(c.admit('k')).toBe(false);
  });

  test('forget drops everything', () => {
    const { cache: c } = cache();
    c.set('k', answer(1));
    c.forget();
    expect(c.get('k')).toBeUndefined();
  });

  test('bounded in bytes, each entry counted with its overhead: the least recently used go', () => {
    // Each entry: 100 bytes of body, a 2-byte key, one header (128) and the overhead (1,024).
    const { cache: c, evictions } = cache({ maxBytes: 3_800 });
    for (let i = 0; i < 5; i++) c.set(`k${i}`, answer(1, 'x'.repeat(100)));
    expect(c.size).toEqual({ entries: 3, bytes: 3 * 1_254 });
    expect(c.get('k0')).toBeUndefined();
    expect(c.get('k4')).toBeDefined();
    expect(evictions()).toBe(2);
  });

  test('concurrent misses of one key share the one call', async () => {
    const { cache: c } = cache();
    let calls = 0;
    let release!: () => void;
    const leader = c.fill('k', async (share) => {
      calls += 1;
      await new Promise<void>((resolve) => (release = resolve));
      const kept = answer(1);
      c.set('k', kept);
      share(kept);
      return 'leader';
    });
    const follower = c.pending('k');
    expect(follower).toBeDefined();
    release();
    expect(await leader).toBe('leader');
    expect((await follower)?.version).toBe(1);
    expect(calls).toBe(1);
    expect(c.pending('k')).toBeUndefined();
  });

  test('a miss that ends without a shareable answer lets the waiting ones go on their own', async () => {
    const { cache: c } = cache();
    const leader = c.fill('k', async () => {
      throw new Error('catalog down');
    });
    const follower = c.pending('k');
    await expect(leader).rejects.toThrow('catalog down');
    expect(await follower).toBeUndefined();
  });

  test('with a time to live, an entry is not served past it', async () => {
    const { cache: c } = cache({ ttlMs: 50 });
    c.set('k', answer(1));
    expect(c.get('k')).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(c.get('k')).toBeUndefined();
  });
});
