import { CATALOG_ROUTES } from '../../services/shared/catalog-routes';
import { buildTestCatalog } from '../support/catalog';
import { onEveryStore } from '../support/store-suites';
import { catalogContract } from './catalog-contract';

onEveryStore('contract', catalogContract);

test('the gateway proxies every public catalog route under its own template', async () => {
  const app = await buildTestCatalog();
  for (const url of CATALOG_ROUTES) expect(app.hasRoute({ method: 'GET', url })).toBe(true);
  await app.close();
});
