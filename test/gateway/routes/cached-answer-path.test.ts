import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { issueKey } from '../../../services/gateway/src/keys/issue-key';
import type { KeyRequest } from '../../../services/gateway/src/keys/issue-key';
import { dataset } from '../../support/catalog';
import { inProcessGateway } from '../../support/gateway';
import { ServiceProcess, tempDataDir } from '../../support/services';
import { within } from '../../support/waits';
import { KEY_CHANGE_POLL_MS } from '../../../services/gateway/src/keys/follow-key-changes';

type Headers = Record<string, string>;
type Issued = Awaited<ReturnType<typeof issueKey>>;
interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

/** Headers that differ between any two answers (the clock, the connection, a unit's count). */
const VARYING = new Set([
  'date',
  'connection',
  'keep-alive',
  'x-ratelimit-remaining',
  'ratelimit',
  'retry-after',
]);

function comparable({ status, headers, body }: Answer) {
  const kept = Object.entries(headers)
    .filter(([name]) => !VARYING.has(name))
    .sort(([a], [b]) => a.localeCompare(b));
  return { status, headers: kept, body };
}

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
  let gateway: Awaited<ReturnType<typeof start>>;
  let emails = 0;
  const fastifyAnswered: string[] = [];
  const logLines: Record<string, unknown>[] = [];
  let logger: pino.Logger;

  async function start() {
    logger = pino(
      { level: 'info' },
      {
        write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>),
      },
    );
    const gateway = await inProcessGateway(
      {
        CATALOG_URL: catalog.url,
        CORS_ORIGINS: corsOrigins,
        QUOTA_FREE: '1000',
        QUOTA_PRO: '1000',
      },
      undefined,
      {
        logger,
        beforeReady: (app) =>
          app.addHook('onResponse', (request, _reply, done) => {
            fastifyAnswered.push(request.url);
            done();
          }),
      },
    );
    await gateway.app.listen({ port: 0, host: '127.0.0.1' });
    return { ...gateway, port: (gateway.app.server.address() as AddressInfo).port };
  }

  beforeAll(async () => {
    catalog = await ServiceProcess.start('catalog', { DATA_DIR: tempDataDir() });
    gateway = await start();
    await issueAll();
  }, within(30_000));
  afterAll(async () => {
    await gateway.close();
    await catalog.stop();
  });

  /**
   * Keys made before the tests, once the gateway has followed their creation: the change feed
   * drops each new key's cache entries when its change arrives (KEY_CHANGE_POLL_MS), and a key
   * not cached is Fastify's to check, so a key made during a test could move a read off the path.
   */
  const pool: Record<'free' | 'pro' | 'bound' | 'scoped', Issued[]> = {
    free: [],
    pro: [],
    bound: [],
    scoped: [],
  };
  async function issueAll() {
    const invalidated: number[] = [];
    const cache = gateway.deps.keyCache;
    const invalidateKey = cache.invalidateKey.bind(cache);
    cache.invalidateKey = (keyId) => {
      invalidated.push(Date.now());
      invalidateKey(keyId);
    };
    const make = (request: Partial<KeyRequest>) =>
      issueKey(gateway.deps.keyStore, {
        tier: 'free',
        email: `path-${(emails += 1)}@example.com`,
        name: 'Path',
        useCase: '',
        ...request,
      });
    for (let i = 0; i < 12; i++) pool.free.push(await make({}));
    for (let i = 0; i < 8; i++) pool.pro.push(await make({ tier: 'pro' }));
    pool.bound.push(await make({ allowedAddresses: ['10.0.0.0/8'] }));
    pool.scoped.push(await make({ scopes: ['usage'] }));
    // Settled: no key change followed for a few polls.
    const quiet = 4 * KEY_CHANGE_POLL_MS;
    const started = Date.now();
    while (Date.now() - Math.max(started, invalidated.at(-1) ?? 0) < quiet) {
      await new Promise((resolve) => setTimeout(resolve, KEY_CHANGE_POLL_MS / 5));
    }
    cache.invalidateKey = invalidateKey;
  }
  const issued = (kind: keyof typeof pool = 'free') => pool[kind].shift()!;
  const key = (kind: keyof typeof pool = 'free') => issued(kind).apiKey;

  /** The value of one series of the gateway's metrics (0 when not there yet). */
  async function series(name: string, ...labels: string[]): Promise<number> {
    const text = await gateway.deps.registry.metrics();
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  }

  /** Over a socket, as a client asks: the cached-answer path may answer. */
  function overSocket(url: string, headers: Headers, method = 'GET'): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: gateway.port, path: url, method, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({
              status: res.statusCode!,
              headers: res.headers as Headers,
              body: Buffer.concat(chunks).toString('latin1'),
            }),
          );
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  /** Through Fastify, always. */
  async function throughFastify(url: string, headers: Headers): Promise<Answer> {
    const response = await gateway.app.inject({ method: 'GET', url, headers });
    return {
      status: response.statusCode,
      headers: response.headers as Headers,
      body: response.rawPayload.toString('latin1'),
    };
  }

  /** The answer over a socket once the cache holds it (a key's third read), and whether Fastify answered it. */
  async function warmThenAsk(url: string, headers: Headers) {
    await throughFastify(url, headers);
    await throughFastify(url, headers);
    fastifyAnswered.length = 0;
    const answer = await overSocket(url, headers);
    return { answer, byFastify: fastifyAnswered.length > 0 };
  }

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
    fastifyAnswered.length = 0;
    const held = await overSocket(url, conditional);
    expect(fastifyAnswered).toEqual([]);
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
      fastifyAnswered.length = 0;
      await overSocket(url, headers, method);
      expect([name, fastifyAnswered]).toEqual([name, [url]]);
    }
    // A draining gateway: Fastify answers, closing the connection.
    gateway.app.draining = true;
    fastifyAnswered.length = 0;
    const draining = await overSocket(url, { 'x-api-key': free });
    gateway.app.draining = false;
    expect(fastifyAnswered).toEqual([url]);
    expect(draining.headers.connection).toBe('close');
    // A route the cache does not hold (not cacheable), a miss, and an escaped path (Fastify
    // decodes it: the same tool, and its answer cached above).
    const escaped = `/v1/tools/%${slug.charCodeAt(0).toString(16)}${slug.slice(1)}`;
    await warmThenAsk(escaped, { 'x-api-key': free });
    for (const other of [`/v1/tools/${slug}/history`, '/v1/tools?limit=10', escaped]) {
      fastifyAnswered.length = 0;
      await overSocket(other, { 'x-api-key': free });
      expect(fastifyAnswered).toEqual([other]);
    }
  });

  test('past the quota: the unit it took is Fastify’s to refuse, the same 429, one unit', async () => {
    const url = '/v1/tools?limit=11';
    const { apiKey, record } = issued();
    const { id } = record;
    const headers = { 'x-api-key': apiKey, 'x-request-id': 'same-id' };
    await warmThenAsk(url, headers);
    const used = (await gateway.deps.quota.peek(id, 'free')).limit - 3;
    for (let i = 0; i < used; i++) await gateway.deps.quota.consume(id, 'free');
    fastifyAnswered.length = 0;
    const refused = await overSocket(url, headers);
    expect(refused.status).toBe(429);
    expect(fastifyAnswered).toEqual([url]);
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
        series('http_requests_total', 'route="/v1/search"', 'status_code="200"'),
        series('gateway_response_cache_requests_total', '"hit"'),
        series('gateway_quota_decisions_total', 'tier="free"', '"allowed"'),
      ]);
    const before = await counted();
    logLines.length = 0;
    fastifyAnswered.length = 0;
    for (let i = 0; i < 3; i++) {
      await overSocket(url, { 'x-api-key': apiKey, 'x-request-id': `line-${i}` });
    }
    expect(fastifyAnswered).toEqual([]);
    expect(await counted()).toEqual(before.map((value) => value + 3));
    const lines = logLines.filter((line) => line.msg === 'request completed');
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

  test('the access line follows the log level as on the Fastify path: none above info', async () => {
    const apiKey = key();
    const url = '/v1/search?q=quiet%20log%20query&limit=2';
    await warmThenAsk(url, { 'x-api-key': apiKey });
    logger.level = 'warn';
    try {
      logLines.length = 0;
      fastifyAnswered.length = 0;
      const hit = await overSocket(url, { 'x-api-key': apiKey });
      expect(hit.headers['x-cache']).toBe('HIT');
      expect(fastifyAnswered).toEqual([]);
      const viaFastify = await gateway.app.inject({
        method: 'GET',
        url,
        headers: { 'x-api-key': apiKey },
      });
      expect(viaFastify.statusCode).toBe(200);
      expect(logLines.filter((line) => line.msg === 'request completed')).toEqual([]);
    } finally {
      logger.level = 'info';
    }
  });
});
