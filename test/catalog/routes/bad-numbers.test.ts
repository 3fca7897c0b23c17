import type { FastifyInstance } from 'fastify';
import { asTier, buildTestCatalog, embeddedStore } from '../../support/catalog';
import type { CatalogStore } from '../../../services/catalog/src/store/catalog-store';

/**
 * Numbers the query-string coercion turns into Infinity are refused like any other bad value
 * (docs/api.md#parameters-and-validation), and a server error answers the API's error body whatever
 * the route had prepared for its success (docs/api.md#errors).
 */
describe('non-finite numbers in the query string', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildTestCatalog();
  });
  afterAll(() => app.close());

  const PAGE = "Invalid query parameter 'page': must be an integer from 1 to 9007199254740991";
  const TOOLS_LIMIT = "Invalid query parameter 'limit': must be an integer from 1 to 100";
  const SEARCH_LIMIT = "Invalid query parameter 'limit': must be an integer from 1 to 50";

  test.each([
    ['/v1/tools?page=Infinity', PAGE],
    ['/v1/tools?page=-Infinity', PAGE],
    ['/v1/tools?page=1e400', PAGE],
    ['/v1/tools?limit=Infinity', TOOLS_LIMIT],
    ['/v1/tools?limit=-Infinity', TOOLS_LIMIT],
    ['/v1/tools?limit=-1e400', TOOLS_LIMIT],
    ['/v1/search?q=vector&limit=Infinity', SEARCH_LIMIT],
    ['/v1/search?q=vector&limit=-Infinity', SEARCH_LIMIT],
    ['/v1/search?q=vector&limit=1e400', SEARCH_LIMIT],
  ])('%s is 400 naming the parameter and its range', async (url, error) => {
    for (const tier of ['free', 'pro'] as const) {
      const res = await app.inject({ url, headers: asTier(tier) });
      expect({ status: res.statusCode, body: res.json() }).toEqual({
        status: 400,
        body: { error },
      });
    }
  });

  test('a finite number written with an exponent still counts', async () => {
    const res = await app.inject({ url: '/v1/tools?limit=1e1', headers: asTier('free') });
    expect(res.statusCode).toBe(200);
    expect(res.json().meta.limit).toBe(10);
  });
});

describe('a server error', () => {
  /** The embedded store with its methods replaced as given. */
  function storeWith(overrides: Partial<CatalogStore>): CatalogStore {
    return Object.assign(embeddedStore(), overrides);
  }
  const broken = () => Promise.reject(new Error('the store failed'));
  // A record the response schema cannot write: the route's serializer throws.
  const malformed = () => Promise.resolve({ items: [{ name: 'half a tool' }], total: 1 } as never);

  test.each([
    ['a failing store on /tools', { listTools: broken }, '/v1/tools'],
    ['a failing store on /search', { search: broken }, '/v1/search?q=vector'],
    ['a failing store on /tools/{slug}', { getTool: broken }, '/v1/tools/langchain'],
    ['a malformed record on /tools', { listTools: malformed }, '/v1/tools'],
    ['a malformed record on /search', { search: malformed }, '/v1/search?q=vector'],
    ['a malformed record on /tools/{slug}', { getTool: malformed }, '/v1/tools/langchain'],
  ] as const)('from %s is 500 with the API error body', async (_name, overrides, url) => {
    const app = await buildTestCatalog(storeWith(overrides));
    try {
      for (const tier of ['free', 'enterprise'] as const) {
        const res = await app.inject({ url, headers: asTier(tier) });
        expect(res.statusCode).toBe(500);
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(res.json()).toEqual({ error: 'Internal server error' });
      }
    } finally {
      await app.close();
    }
  });
});
