import type { FastifyInstance } from 'fastify';
import { NOT_SEEDED } from '../../services/catalog/src/store/catalog-readiness';
import { EmbeddedStore } from '../../services/catalog/src/store/embedded-store';
import { buildTestCatalog, embeddedStore, newTool } from '../support/catalog';
import { tempDataDir } from '../support/services';

/**
 * The catalog's /readyz says whether there is a catalog to serve: a store that never held a
 * tool (a MongoDB the seed has not reached yet; here an embedded store given no dataset, the
 * same version 0) is not ready, so no traffic reaches an empty catalog.
 */
describe('catalog readiness', () => {
  const opened: Array<{ app: FastifyInstance; store: EmbeddedStore }> = [];
  const open = async (store: EmbeddedStore) => {
    const app = await buildTestCatalog(store);
    opened.push({ app, store });
    return app;
  };
  afterEach(async () => {
    for (const { app, store } of opened.splice(0)) {
      await app.close();
      await store.close();
    }
  });

  test('a store that never held a tool is not ready, and says why', async () => {
    const app = await open(new EmbeddedStore(tempDataDir(), []));
    const res = await app.inject({ url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: 'unavailable', reason: NOT_SEEDED });
    expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);
  });

  test('becomes ready with its first tool, and stays ready when operators delete every tool', async () => {
    const store = new EmbeddedStore(tempDataDir(), []);
    const app = await open(store);
    await store.upsert([newTool()]);
    expect((await app.inject({ url: '/readyz' })).json()).toEqual({ status: 'ready' });
    await store.delete(newTool().slug);
    expect((await store.listTools({ page: 1, limit: 1, sort: 'name' })).total).toBe(0);
    expect((await app.inject({ url: '/readyz' })).statusCode).toBe(200);
  });

  test('a store seeded with the bundled dataset is ready', async () => {
    const app = await open(embeddedStore());
    expect((await app.inject({ url: '/readyz' })).json()).toEqual({ status: 'ready' });
  });
});
