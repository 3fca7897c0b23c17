import type { FastifyInstance } from 'fastify';
import { asTier, buildTestCatalog } from '../support/catalog';

/** The 404 of an unknown route says what is wrong, and points at /v1 only from outside it. */
describe('unknown routes', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildTestCatalog();
  });
  afterAll(() => app.close());

  test.each([
    ['GET', '/v1/nothing', 'Route GET /v1/nothing does not exist'],
    ['DELETE', '/v1/tools', 'Route DELETE /v1/tools does not exist'],
    ['GET', '/v1', 'Route GET /v1 does not exist'],
    ['GET', '/v2/tools?limit=1', 'Route GET /v2/tools does not exist; the API lives under /v1'],
    ['GET', '/v1tools', 'Route GET /v1tools does not exist; the API lives under /v1'],
  ] as const)('%s %s', async (method, url, error) => {
    const response = await app.inject({ method, url, headers: asTier('free') });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error });
  });
});
