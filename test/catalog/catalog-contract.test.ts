import { CATALOG_ROUTES } from '../../services/shared/catalog-routes';
import { buildTestCatalog } from '../support/catalog';
import { onEveryStore } from '../support/store-suites';
import { catalogContract } from './catalog-contract';

onEveryStore('contract', catalogContract);

test("the catalog serves exactly the routes of the gateway's table under /v1", async () => {
  const app = await buildTestCatalog();
  const served: string[] = [];
  app.addHook('onRoute', (route) => {
    const methods = ([] as string[]).concat(route.method).filter((m) => m !== 'HEAD');
    if (route.url.startsWith('/v1/')) for (const m of methods) served.push(`${m} ${route.url}`);
  });
  await app.ready();
  const table = CATALOG_ROUTES.map((r) => `${r.method} ${r.url}`);
  expect([...served].sort()).toEqual([...table].sort());
  await app.close();
});
