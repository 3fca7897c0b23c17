import { buildCatalogApp } from '../../services/catalog/src/app';
import { catalogOpenapiDocument } from '../../services/catalog/src/openapi-document';
import { EmbeddedDeliveryQueue } from '../../services/catalog/src/webhooks/embedded-delivery-queue';
import { EmbeddedSubscriptionStore } from '../../services/catalog/src/webhooks/embedded-subscription-store';
import { CATALOG_ROUTES } from '../../services/shared/catalog-routes';
import { TEST_INTERNAL_TOKEN, dataset, embeddedStore } from '../support/catalog';
import { tempDataDir } from '../support/services';
import { onEveryStore } from '../support/store-suites';
import { catalogContract } from './catalog-contract';

onEveryStore('contract', catalogContract);

test("the catalog's public routes are exactly the gateway's table", async () => {
  // Every route module of the catalog, as the OpenAPI document registers them.
  const document = await catalogOpenapiDocument();
  const documented = Object.entries(document.paths).flatMap(([url, item]) =>
    Object.keys(item ?? {}).map(
      (method) => `${method.toUpperCase()} ${url.replace(/\{(\w+)\}/g, ':$1')}`,
    ),
  );
  const table = CATALOG_ROUTES.map((r) => `${r.method} ${r.url}`);
  expect([...documented].sort()).toEqual([...table].sort());

  // And a running catalog with webhooks configured serves each of them.
  const dataDir = tempDataDir();
  const store = embeddedStore(dataDir);
  const subscriptions = new EmbeddedSubscriptionStore(dataDir);
  const queue = new EmbeddedDeliveryQueue(dataDir);
  const app = await buildCatalogApp({
    store,
    meta: dataset.meta,
    internalToken: TEST_INTERNAL_TOKEN,
    logger: false,
    webhooks: { subscriptions, queue, allowPrivate: false },
  });
  for (const { method, url } of CATALOG_ROUTES) expect(app.hasRoute({ method, url })).toBe(true);
  await app.close();
  await Promise.all([queue.close(), subscriptions.close(), store.close()]);
});
