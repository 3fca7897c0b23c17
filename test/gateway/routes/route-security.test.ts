import Fastify, { type FastifyReply } from 'fastify';
import { denyByDefaultPlugin } from '../../../services/gateway/src/plugins/deny-by-default';
import { SCOPES } from '../../../services/shared/contract';
import pino from 'pino';
import {
  type GatewayInstance,
  configureGateway,
  createGatewayInstance,
} from '../../../services/gateway/src/app';
import { loadGatewayConfig } from '../../../services/gateway/src/config';
import { createGatewayDependencies } from '../../../services/gateway/src/dependencies';
import { freePort } from '../../support/ports';
import { INTERNAL_TOKEN, tempDataDir } from '../../support/services';

/** A URL that the route template matches: every parameter and wildcard filled in. */
function concrete(url: string): string {
  return url.replace(/:[^/]+/g, 'x').replace(/\*$/, 'anything');
}

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
    expect(open.filter((r) => r.includes('/v1/'))).toEqual([
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
    }
    expect(refused).toEqual([]);
  });

  test('the tier of a catalog route is checked with the key, before the body', () => {
    const access = Object.fromEntries(
      app.routeSecurity.map((r) => [`${r.method} ${r.url}`, r.access]),
    );
    expect(access['GET /v1/compare/:tool1/:tool2']).toBe('key, pro');
    expect(access['POST /v1/webhooks']).toBe('key, enterprise');
    expect(access['GET /v1/tools']).toBe('key');
    // A route that changes the key takes its current secret only.
    expect(access['POST /v1/keys/roll']).toBe('key, current secret');
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
    expect(scopes).toMatchObject({
      'GET /v1/tools': 'catalog:read',
      'POST /v1/mcp': 'catalog:read',
      'GET /v1/export': 'export',
      'POST /v1/webhooks': 'webhooks',
      'GET /v1/usage': 'usage',
      'GET /v1/keys/events': 'usage',
      'POST /v1/keys/roll': 'keys:roll',
      'GET /v1/*': 'none',
    });
  });
});

describe('a route added later, by any plugin, is guarded without asking', () => {
  test('a keyed route that declares no scope is refused at start-up', async () => {
    const app = Fastify();
    const refuse = async (_request: unknown, reply: FastifyReply) => {
      await reply.code(401).send({ error: 'no key' });
    };
    await app.register(denyByDefaultPlugin, { guard: refuse, check: refuse });
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
    await app.register(denyByDefaultPlugin, { guard: refuse('guard'), check: refuse('check') });
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
