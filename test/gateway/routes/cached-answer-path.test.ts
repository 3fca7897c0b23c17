import { dataset } from '../../support/catalog';
import {
  type Headers,
  type PathGateway,
  comparable,
  preparedThenAsk,
  startPathGateway,
} from '../../support/before-fastify';
import { ServiceProcess, tempDataDir } from '../../support/services';
import { within } from '../../support/waits';

/**
 * The cached-answer path (routes/cached-answer-path.ts): a keyed GET whose answer the response
 * cache holds is answered before Fastify, and must answer exactly as Fastify would. Each request
 * goes once over a socket (the path) and once through `inject` (Fastify always), and the answers
 * are compared; a hook on Fastify's responses tells which path answered.
 */
describe.each([
  ['any origin', '*'],
  ['a list of origins', 'https://app.example'],
])('the cached-answer path, CORS for %s', (_name, corsOrigins) => {
  let catalog: ServiceProcess;
  let gateway: PathGateway;

  beforeAll(async () => {
    catalog = await ServiceProcess.start('catalog', { DATA_DIR: tempDataDir() });
    gateway = await startPathGateway(catalog.url, corsOrigins);
    await gateway.issueKeys(12, 8);
  }, within(30_000));
  afterAll(async () => {
    await gateway.close();
    await catalog.stop();
  });

  const key = (kind: Parameters<PathGateway['issued']>[0] = 'free') => gateway.issued(kind).apiKey;
  const overSocket = (url: string, headers: Headers, method = 'GET') =>
    gateway.overSocket({ method, url, headers });
  const throughFastify = (url: string, headers: Headers) =>
    gateway.throughFastify({ method: 'GET', url, headers });
  /** The answer over a socket once the cache holds it (a key's third read), and whether Fastify answered it. */
  const warmThenAsk = (url: string, headers: Headers) =>
    preparedThenAsk(gateway, { method: 'GET', url, headers });

  const slug = dataset.tools[2]!.slug;
  const reads = [
    ['a list', '/v1/tools?limit=5', {}],
    ['a tool', `/v1/tools/${slug}`, {}],
    ['categories', '/v1/categories', {}],
    ['a search', '/v1/search?q=agent&limit=3', {}],
    ['a search of two words (an escaped query)', '/v1/search?q=vector%20database&limit=3', {}],
    ['gzip', '/v1/tools?limit=6', { 'accept-encoding': 'gzip' }],
    ['a request id', '/v1/tools?limit=7', { 'x-request-id': 'client-id-1' }],
  ] as const;

  test.each(reads)('%s: answered before Fastify, as Fastify answers it', async (_n, url, extra) => {
    for (const tier of ['free', 'pro'] as const) {
      const headers = { 'x-api-key': key(tier), 'x-request-id': 'same-id', ...extra };
      const { answer, byFastify } = await warmThenAsk(url, headers);
      expect(byFastify).toBe(false);
      expect(answer.headers['x-cache']).toBe('HIT');
      const fastify = await throughFastify(url, headers);
      expect(comparable(answer)).toEqual(comparable(fastify));
      // One unit each: the path's read and Fastify's after it are consecutive.
      expect(Number(answer.headers['x-ratelimit-remaining'])).toBe(
        Number(fastify.headers['x-ratelimit-remaining']) + 1,
      );
    }
  });

  test('a 304 for an ETag the client holds: no unit, the same head as Fastify', async () => {
    const url = '/v1/tools?limit=8';
    const headers = { 'x-api-key': key(), 'x-request-id': 'same-id' };
    const { answer } = await warmThenAsk(url, headers);
    const conditional = { ...headers, 'if-none-match': answer.headers.etag! };
    gateway.fastifyAnswered.length = 0;
    const held = await overSocket(url, conditional);
    expect(gateway.fastifyAnswered).toEqual([]);
    expect(held.status).toBe(304);
    expect(held.body).toBe('');
    expect(held.headers['x-ratelimit-remaining']).toBe(answer.headers['x-ratelimit-remaining']);
    expect(comparable(held)).toEqual(comparable(await throughFastify(url, conditional)));
  });

  test('what the path does not answer reaches Fastify, before any unit is taken', async () => {
    const url = '/v1/tools?limit=9';
    const free = key();
    await warmThenAsk(url, { 'x-api-key': free });
    const cases: [string, Headers, string?][] = [
      ['HEAD', { 'x-api-key': free }, 'HEAD'],
      ['a stale ETag', { 'x-api-key': free, 'if-none-match': '"old"' }],
      ['an unknown key', { 'x-api-key': 'tdk_unknown' }],
      ['no key', {}],
      ['a key bound to addresses', { 'x-api-key': key('bound') }],
      ['a key without the scope', { 'x-api-key': key('scoped') }],
      ['a body', { 'x-api-key': free, 'content-length': '0' }],
    ];
    if (corsOrigins !== '*')
      cases.push(['an Origin', { 'x-api-key': free, origin: 'https://app.example' }]);
    for (const [name, headers, method] of cases) {
      gateway.fastifyAnswered.length = 0;
      await overSocket(url, headers, method);
      expect([name, gateway.fastifyAnswered]).toEqual([name, [`${method ?? 'GET'} ${url}`]]);
    }
    // A draining gateway: Fastify answers, closing the connection.
    gateway.app.draining = true;
    gateway.fastifyAnswered.length = 0;
    const draining = await overSocket(url, { 'x-api-key': free });
    gateway.app.draining = false;
    expect(gateway.fastifyAnswered).toEqual([`GET ${url}`]);
    expect(draining.headers.connection).toBe('close');
    // A route the cache does not hold (not cacheable), a miss, and an escaped path (Fastify
    // decodes it: the same tool, and its answer cached above).
    const escaped = `/v1/tools/%${slug.charCodeAt(0).toString(16)}${slug.slice(1)}`;
    await warmThenAsk(escaped, { 'x-api-key': free });
    for (const other of [`/v1/tools/${slug}/history`, '/v1/tools?limit=10', escaped]) {
      gateway.fastifyAnswered.length = 0;
      await overSocket(other, { 'x-api-key': free });
      expect(gateway.fastifyAnswered).toEqual([`GET ${other}`]);
    }
  });

  test('past the quota: the unit it took is Fastify’s to refuse, the same 429, one unit', async () => {
    const url = '/v1/tools?limit=11';
    const { apiKey, record } = gateway.issued();
    const { id } = record;
    const headers = { 'x-api-key': apiKey, 'x-request-id': 'same-id' };
    await warmThenAsk(url, headers);
    const used = (await gateway.deps.quota.peek(id, 'free')).limit - 3;
    for (let i = 0; i < used; i++) await gateway.deps.quota.consume(id, 'free');
    gateway.fastifyAnswered.length = 0;
    const refused = await overSocket(url, headers);
    expect(refused.status).toBe(429);
    expect(gateway.fastifyAnswered).toEqual([`GET ${url}`]);
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    const before = (await gateway.deps.quota.peek(id, 'free')).remaining;
    expect(before).toBe(0);
    expect(comparable(refused)).toEqual(comparable(await throughFastify(url, headers)));
  });

  test('each answer counted, logged and in the search analytics, as Fastify’s are', async () => {
    const apiKey = key();
    const url = '/v1/search?q=fast%20path%20query&limit=2';
    await warmThenAsk(url, { 'x-api-key': apiKey });
    const counted = () =>
      Promise.all([
        gateway.series('http_requests_total', 'route="/v1/search"', 'status_code="200"'),
        gateway.series('gateway_response_cache_requests_total', '"hit"'),
        gateway.series('gateway_quota_decisions_total', 'tier="free"', '"allowed"'),
      ]);
    const before = await counted();
    gateway.logLines.length = 0;
    gateway.fastifyAnswered.length = 0;
    for (let i = 0; i < 3; i++) {
      await overSocket(url, { 'x-api-key': apiKey, 'x-request-id': `line-${i}` });
    }
    expect(gateway.fastifyAnswered).toEqual([]);
    expect(await counted()).toEqual(before.map((value) => value + 3));
    const lines = gateway.logLines.filter((line) => line.msg === 'request completed');
    expect(lines.map((l) => [l.reqId, l.method, l.route, l.status, l.tier])).toEqual(
      [0, 1, 2].map((i) => [`line-${i}`, 'GET', '/v1/search', 200, 'free']),
    );
    const searches = await gateway.app.inject({
      method: 'GET',
      url: '/v1/usage/searches',
      headers: { 'x-api-key': apiKey },
    });
    // Five searches: the two that warmed the cache through Fastify, three by the path.
    // The query as Fastify reads it, decoded.
    expect(JSON.stringify(searches.json())).toMatch(/"fast path query"/);
  });
});
