import Fastify, { type FastifyReply, type InjectOptions } from 'fastify';
import { API_KEY_CHALLENGE } from '../../../services/gateway/src/guard/api-key-guard';
import {
  KEY_PREFIX,
  generateApiKey,
  isWellFormedKey,
} from '../../../services/gateway/src/keys/api-key';
import { type KeyRequest, issueKey, rollKey } from '../../../services/gateway/src/keys/issue-key';
import {
  type RouteSecurity,
  denyByDefaultPlugin,
} from '../../../services/gateway/src/plugins/deny-by-default';
import {
  CATALOG_ROUTES,
  type CatalogRoute,
  MCP_ROUTE,
  SCOPES,
  type Scope,
} from '../../../services/shared/contract';
import { TIERS, TIER_LABELS, type Tier, tierAtLeast } from '../../../services/shared/tiers';
import pino from 'pino';
import {
  type GatewayInstance,
  configureGateway,
  createGatewayInstance,
} from '../../../services/gateway/src/app';
import { loadGatewayConfig } from '../../../services/gateway/src/config';
import { createGatewayDependencies } from '../../../services/gateway/src/dependencies';
import { inProcessGateway } from '../../support/gateway';
import { freePort } from '../../support/ports';
import { INTERNAL_TOKEN, tempDataDir } from '../../support/services';

/** A URL that the route template matches: every parameter and wildcard filled in. */
function concrete(url: string): string {
  return url.replace(/:[^/]+/g, 'x').replace(/\*$/, 'anything');
}

/** The public routes of the route table (services/shared/contract.ts): the catalog's, and MCP. */
const TABLE: readonly CatalogRoute[] = [...CATALOG_ROUTES, MCP_ROUTE];

/** The table's entry for a route the gateway registered (HEAD is served as GET). */
function tableEntry(method: string, url: string): CatalogRoute | undefined {
  const asked = method === 'HEAD' ? 'GET' : method;
  return TABLE.find((route) => route.method === asked && route.url === url);
}

/** How the guard must record a route of the table: by its quota cost, then its tier. */
function tableAccess(route: CatalogRoute): RouteSecurity['access'] {
  if (route.quotaCost === 0) return 'key, free of quota';
  if (route.quotaCost === 'per-operation') return 'key, quota per operation';
  return route.tier === 'free' ? 'key' : `key, ${route.tier}`;
}

/** The challenge of a 401: the MCP endpoint's names its OAuth resource metadata first. */
const challengeOf = (url: string) =>
  url === MCP_ROUTE.url
    ? expect.stringMatching(
        /^Bearer resource_metadata="http:\/\/[^"]+\/\.well-known\/oauth-protected-resource\/v1\/mcp", ApiKey realm="Tool Directory", header="x-api-key"$/,
      )
    : API_KEY_CHALLENGE;

const routeName = (r: { method: string; url: string }) => `${r.method} ${r.url}`;
const byRoute = (a: RouteSecurity, b: RouteSecurity) => routeName(a).localeCompare(routeName(b));

/**
 * Deny by default: every route the gateway serves is either public by declaration or answers 401
 * to a request without a key, whatever its method and body, before anything else happens. The
 * routes are listed by a hook of the test's own, added to the instance before the gateway
 * registers anything: none can slip past the guard by being registered where it does not look.
 */
describe('every gateway route is public by declaration or needs a key', () => {
  let app: GatewayInstance;
  let close: () => Promise<void>;
  const registered: string[] = [];

  beforeAll(async () => {
    const config = loadGatewayConfig({
      INTERNAL_TOKEN,
      DATA_DIR: tempDataDir(),
      CATALOG_URL: `http://127.0.0.1:${await freePort()}`,
    });
    const deps = await createGatewayDependencies(config, { logger: pino({ level: 'silent' }) });
    app = createGatewayInstance({ config, logger: false });
    app.addHook('onRoute', (route) => {
      for (const method of ([] as string[]).concat(route.method)) {
        registered.push(`${method} ${route.url}`);
      }
    });
    await configureGateway(app, { config, deps, logger: false });
    await app.ready();
    close = async () => {
      await app.close();
      await deps.close();
    };
  });
  afterAll(() => close());

  test('the guard saw every route, and opens only what is declared open', () => {
    const decided = app.routeSecurity.map((r) => `${r.method} ${r.url}`);
    expect(decided.sort()).toEqual([...registered].sort());
    const open = app.routeSecurity
      .filter((r) => r.access === 'public')
      .map((r) => `${r.method} ${r.url}`);
    expect(open).toEqual(
      expect.arrayContaining(['GET /healthz', 'GET /readyz', 'POST /v1/register', 'GET /']),
    );
    // Registration and leak reports (signed by a secret scanner, which has no key) only.
    expect(open.filter((r) => / \/v1\//.test(r))).toEqual([
      'POST /v1/keys/leaks',
      'POST /v1/register',
    ]);
  });

  test('every route not declared public answers 401 without a key, the body never read', async () => {
    const refused: string[] = [];
    for (const { method, url, access } of app.routeSecurity) {
      if (access === 'public') continue;
      const response = await app.inject({
        method: method as 'GET',
        url: concrete(url),
        headers: { 'content-type': 'application/json' },
        // Not JSON: a route that read its body before the key would answer 400.
        ...(method === 'GET' || method === 'HEAD' ? {} : { payload: '{not json' }),
      });
      if (response.statusCode !== 401) refused.push(`${method} ${url}: ${response.statusCode}`);
      else if (method !== 'HEAD') {
        expect(response.json().error).toMatch(/x-api-key header is missing/);
      }
      expect([url, response.headers['www-authenticate']]).toEqual([url, challengeOf(url)]);
    }
    expect(refused).toEqual([]);
  });

  test('every route of the table is guarded as its entry says: tier, quota cost and scope', () => {
    const expected = TABLE.flatMap((route) =>
      (route.method === 'GET' ? ['GET', 'HEAD'] : [route.method]).map((method) => ({
        method,
        url: route.url,
        access: tableAccess(route),
        scope: route.scope,
      })),
    );
    const guarded = app.routeSecurity.filter((r) => tableEntry(r.method, r.url) !== undefined);
    expect([...guarded].sort(byRoute)).toEqual(expected.sort(byRoute));
    // A route that changes the key takes its current secret only.
    expect(
      app.routeSecurity.filter((r) => r.access === 'key, current secret').map(routeName),
    ).toEqual(['POST /v1/keys/roll']);
  });

  test('every keyed route declares the scope a restricted key needs for it', () => {
    const scopes = Object.fromEntries(
      app.routeSecurity
        .filter((r) => r.access !== 'public')
        .map((r) => [`${r.method} ${r.url}`, r.scope]),
    );
    for (const [route, scope] of Object.entries(scopes)) {
      expect([route, [...SCOPES, 'none'].includes(scope!)]).toEqual([route, true]);
    }
    // The gateway's own routes; the table's are held to their entries above.
    expect(scopes).toMatchObject({
      'GET /v1/usage': 'usage',
      'GET /v1/keys/events': 'usage',
      'POST /v1/keys/roll': 'keys:roll',
      'GET /v1/*': 'none',
    });
  });
});

/** A route the guard keeps, with the tier its table entry names (free: no entry, or a free one). */
type KeyedRoute = RouteSecurity & { tier: Tier };

/** What a route answered to one case: a status of the guard with its error, or let through. */
interface Outcome {
  route: string;
  status: number | 'let through';
  error?: unknown;
  challenge?: unknown;
}

/** The statuses the guard answers with; a request it lets through meets none of them here. */
const GUARD_STATUSES = [401, 403, 429];

/**
 * Each keyed route's security cases, generated: the routes are the guard's own list (held to the
 * route table above), and what each must answer comes from its table entry (tier, scope) or from
 * the guard's record of it (no unit taken, current secret only). No route is named here: a route
 * added to the table or to the gateway gets every case. The catalog is not there, so a request
 * the guard lets through gets what its route answers without one (502 or 503, a 400 for a body
 * that is not JSON, a 404 or 405), never 401, 403 or 429.
 */
describe('every keyed route, case by case: 401, 403 and 429 as its entry says', () => {
  let gateway: Awaited<ReturnType<typeof inProcessGateway>>;
  let routes: KeyedRoute[];
  let emails = 0;

  beforeAll(async () => {
    gateway = await inProcessGateway({
      CATALOG_URL: `http://127.0.0.1:${await freePort()}`,
      // Unknown keys on every route from one address; the limit itself: forged-keys.test.ts.
      INVALID_KEYS_PER_MINUTE: '100000',
      // Room for every case of a key, and quick to spend to the end.
      QUOTA_PRO: '500',
      QUOTA_ENTERPRISE: '1000',
    });
    routes = gateway.app.routeSecurity
      .filter((r) => r.access !== 'public')
      .map((r) => ({ ...r, tier: tableEntry(r.method, r.url)?.tier ?? 'free' }));
  });
  afterAll(() => gateway.close());

  /** A key of its own, as an operator issues it: Enterprise and unrestricted unless said. */
  const key = (request: Partial<KeyRequest> = {}) =>
    issueKey(gateway.deps.keyStore, {
      tier: 'enterprise',
      email: `route-security-${(emails += 1)}@example.com`,
      name: 'Route security',
      useCase: '',
      ...request,
    });

  /** The route asked with `apiKey` (undefined: no header), from `remoteAddress`. */
  async function outcome(
    route: RouteSecurity,
    apiKey: string | undefined,
    remoteAddress = '10.9.0.1',
  ): Promise<Outcome> {
    const response = await gateway.app.inject({
      method: route.method as InjectOptions['method'],
      url: concrete(route.url),
      remoteAddress,
      headers: {
        'content-type': 'application/json',
        ...(apiKey !== undefined && { 'x-api-key': apiKey }),
      },
      // Not JSON: a route that read its body before the guard would answer 400.
      ...(route.method === 'GET' || route.method === 'HEAD' ? {} : { payload: '{not json' }),
    });
    const status = response.statusCode;
    if (!GUARD_STATUSES.includes(status)) return { route: routeName(route), status: 'let through' };
    return {
      route: routeName(route),
      status,
      ...(route.method !== 'HEAD' && { error: response.json<{ error: string }>().error }),
      ...(status === 401 && { challenge: response.headers['www-authenticate'] }),
    };
  }

  /** Every route of `list` asked in turn, one at a time: quota counts stay exact. */
  async function askEach(
    list: readonly KeyedRoute[],
    ask: (route: KeyedRoute) => Promise<Outcome>,
  ) {
    const outcomes: Outcome[] = [];
    for (const route of list) outcomes.push(await ask(route));
    return outcomes;
  }

  const letThrough = (route: RouteSecurity): Outcome => ({
    route: routeName(route),
    status: 'let through',
  });
  /** A refusal as expected: its status, its error where there is a body, the challenge of a 401. */
  const refused = (route: RouteSecurity, status: number, error: string | RegExp): Outcome => ({
    route: routeName(route),
    status,
    ...(route.method !== 'HEAD' && {
      error: typeof error === 'string' ? error : expect.stringMatching(error),
    }),
    ...(status === 401 && { challenge: challengeOf(route.url) }),
  });

  test('the cases below ask every keyed route, the table routes among them', () => {
    expect(routes.length).toBeGreaterThan(0);
    for (const entry of TABLE) {
      expect([routeName(entry), routes.some((r) => routeName(r) === routeName(entry))]).toEqual([
        routeName(entry),
        true,
      ]);
    }
  });

  test('no key, or a key that is not one: 401 with the challenge, the body never read', async () => {
    const wrongChecksum = `${KEY_PREFIX}${'A'.repeat(38)}`;
    expect(isWellFormedKey(wrongChecksum)).toBe(false);
    const cases: [string, string | undefined, string | RegExp][] = [
      ['no key', undefined, /^The x-api-key header is missing/],
      ['not our shape', 'not-a-key', 'The API key is invalid'],
      ['a wrong checksum', wrongChecksum, 'The API key is invalid'],
      ['well formed, never issued', generateApiKey(), 'The API key is invalid'],
    ];
    for (const [what, apiKey, error] of cases) {
      const outcomes = await askEach(routes, (route) => outcome(route, apiKey));
      expect([what, outcomes]).toEqual([what, routes.map((r) => refused(r, 401, error))]);
    }
  });

  test('a secret that ended: 401 saying what ended it', async () => {
    const revoked = await key();
    await gateway.deps.keyStore.update(revoked.record.id, {
      revokedAt: new Date().toISOString(),
      revokedReason: 'revoked',
    });
    const expired = await key({ expiresAt: new Date(Date.now() - 60_000).toISOString() });
    for (const [apiKey, error] of [
      [revoked.apiKey, /^The API key is invalid: it was revoked at /],
      [expired.apiKey, /^The API key is invalid: it expired at /],
    ] as const) {
      expect(await askEach(routes, (route) => outcome(route, apiKey))).toEqual(
        routes.map((r) => refused(r, 401, error)),
      );
    }
  });

  test('from an address the key does not allow: 403; from one it allows, let through', async () => {
    const { apiKey } = await key({ allowedAddresses: ['192.0.2.0/24'] });
    expect(await askEach(routes, (route) => outcome(route, apiKey, '10.9.0.1'))).toEqual(
      routes.map((r) =>
        refused(r, 403, 'This key is restricted: this address is not allowed to use it'),
      ),
    );
    expect(await askEach(routes, (route) => outcome(route, apiKey, '192.0.2.5'))).toEqual(
      routes.map(letThrough),
    );
  });

  test("each tier: 403 below the entry's tier, naming it; let through from that tier up", async () => {
    for (const tier of TIERS) {
      const { apiKey } = await key({ tier });
      const outcomes = await askEach(routes, (route) => outcome(route, apiKey));
      expect([tier, outcomes]).toEqual([
        tier,
        routes.map((r) =>
          tierAtLeast(tier, r.tier)
            ? letThrough(r)
            : refused(r, 403, new RegExp(`^This endpoint needs an? ${TIER_LABELS[r.tier]}\\b`)),
        ),
      ]);
    }
  });

  test("a restricted key: 403 naming the route's scope when it lacks it, let through when it has it", async () => {
    const lacks = (r: RouteSecurity) =>
      refused(
        r,
        403,
        `This key is restricted: it lacks the scope '${r.scope}' this endpoint needs`,
      );
    for (const scope of SCOPES) {
      const only = await key({ scopes: [scope] });
      const allBut = await key({ scopes: SCOPES.filter((s) => s !== scope) });
      // A route of scope `none` serves nothing a scope guards (the 404s): every key passes.
      const needs = (r: RouteSecurity, scopes: readonly Scope[]) =>
        r.scope === 'none' || scopes.includes(r.scope as Scope) ? letThrough(r) : lacks(r);
      expect([scope, await askEach(routes, (route) => outcome(route, only.apiKey))]).toEqual([
        scope,
        routes.map((r) => needs(r, [scope])),
      ]);
      expect([scope, await askEach(routes, (route) => outcome(route, allBut.apiKey))]).toEqual([
        scope,
        routes.map((r) => needs(r, allBut.record.scopes!)),
      ]);
    }
  });

  test('the previous secret of a rolled key: 403 where the route manages the key, let through elsewhere', async () => {
    const { apiKey: previous, record } = await key();
    const rolled = await rollKey(gateway.deps.keyStore, record.id, 3_600);
    expect(await askEach(routes, (route) => outcome(route, previous))).toEqual(
      routes.map((r) =>
        r.access === 'key, current secret'
          ? refused(
              r,
              403,
              /^This secret is being replaced \(it works until .+\) and cannot manage/,
            )
          : letThrough(r),
      ),
    );
    expect(await askEach(routes, (route) => outcome(route, rolled!.apiKey))).toEqual(
      routes.map(letThrough),
    );
  });

  test("a key past its tier's daily quota: 429 wherever a unit is taken, let through where none is", async () => {
    for (const tier of TIERS) {
      const { apiKey, record } = await key({ tier });
      // Spent as requests spend it, until refused.
      while ((await gateway.deps.quota.consume(record.id, tier)).allowed) continue;
      const outcomes = await askEach(routes, (route) => outcome(route, apiKey));
      expect([tier, outcomes]).toEqual([
        tier,
        routes.map((r) =>
          // A route charging per operation refuses the operation, not the request (its body here
          // is not JSON: no operation).
          r.access === 'key, free of quota' || r.access === 'key, quota per operation'
            ? letThrough(r)
            : refused(r, 429, new RegExp(`^Daily quota of the ${TIER_LABELS[tier]} tier `)),
        ),
      ]);
    }
  });
});

describe('a route added later, by any plugin, is guarded without asking', () => {
  test('a keyed route that declares no scope is refused at start-up', async () => {
    const app = Fastify();
    const refuse = async (_request: unknown, reply: FastifyReply) => {
      await reply.code(401).send({ error: 'no key' });
    };
    await app.register(denyByDefaultPlugin, { guard: refuse, check: refuse, identify: refuse });
    expect(() => app.get('/v1/unscoped', async () => ({ data: 'secret' }))).toThrow(
      'Route GET /v1/unscoped declares no scope (config.scope)',
    );
    await app.close();
  });

  test('a new route with no tier answers 401; one declared public answers', async () => {
    const app = Fastify();
    const refuse = (by: string) => async (_request: unknown, reply: FastifyReply) => {
      await reply.code(401).header('x-refused-by', by).send({ error: 'no key' });
    };
    await app.register(denyByDefaultPlugin, {
      guard: refuse('guard'),
      check: refuse('check'),
      identify: refuse('identify'),
    });
    await app.register(async (scope) => {
      scope.get('/v1/new-endpoint', { config: { scope: 'export' } }, async () => ({
        data: 'secret',
      }));
      scope.get('/v1/free-endpoint', { config: { quotaCost: 0, scope: 'usage' } }, async () => ({
        data: 1,
      }));
      scope.get('/status', { config: { public: true } }, async () => ({ ok: true }));
    });
    await app.ready();
    const endpoint = await app.inject({ url: '/v1/new-endpoint' });
    expect([endpoint.statusCode, endpoint.headers['x-refused-by']]).toEqual([401, 'guard']);
    const free = await app.inject({ url: '/v1/free-endpoint' });
    expect([free.statusCode, free.headers['x-refused-by']]).toEqual([401, 'check']);
    expect((await app.inject({ url: '/status' })).statusCode).toBe(200);
    expect(app.routeSecurity.map((r) => `${r.method} ${r.url} ${r.access}`)).toEqual([
      'GET /v1/new-endpoint key',
      'HEAD /v1/new-endpoint key',
      'GET /v1/free-endpoint key, free of quota',
      'HEAD /v1/free-endpoint key, free of quota',
      'GET /status public',
      'HEAD /status public',
    ]);
    await app.close();
  });
});
