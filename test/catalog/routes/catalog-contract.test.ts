import { buildCatalogApp } from '../../../services/catalog/src/app';
import { catalogOpenapiDocument } from '../../../services/catalog/src/schemas/openapi-document';
import { EmbeddedDeliveryQueue } from '../../../services/catalog/src/webhooks/embedded-delivery-queue';
import { EmbeddedSubscriptionStore } from '../../../services/catalog/src/webhooks/embedded-subscription-store';
import { CATALOG_ROUTES } from '../../../services/shared/contract';
import { CATALOG_VERSION_HEADER } from '../../../services/shared/contract';
import { INTERNAL_HEADERS } from '../../../services/shared/contract';
import { TEST_INTERNAL_TOKEN, dataset, embeddedStore } from '../../support/catalog';
import { tempDataDir } from '../../support/services';
import { onEveryStore } from '../../support/store-suites';
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

  // The table's `cacheable` is what the catalog does: exactly those routes' answers carry the
  // catalog version the gateway's cache keys on (the others answer per key, or stream).
  const [one, other] = dataset.tools;
  const versioned: Record<string, boolean> = {};
  for (const route of CATALOG_ROUTES.filter((r) => r.method === 'GET' && !r.url.includes(':id'))) {
    const url = route.url
      .replace(':slug', one!.slug)
      .replace(':tool1', one!.slug)
      .replace(':tool2', other!.slug)
      .replace(/\/search$/, '/search?q=agent');
    const response = await app.inject({
      url,
      headers: {
        [INTERNAL_HEADERS.token]: TEST_INTERNAL_TOKEN,
        [INTERNAL_HEADERS.tier]: 'enterprise',
        [INTERNAL_HEADERS.keyId]: 'key_contract',
      },
    });
    expect([url, response.statusCode]).toEqual([url, 200]);
    versioned[route.url] = response.headers[CATALOG_VERSION_HEADER] !== undefined;
  }
  expect(versioned).toEqual(
    Object.fromEntries(
      CATALOG_ROUTES.filter((r) => r.method === 'GET' && !r.url.includes(':id')).map((r) => [
        r.url,
        r.cacheable === true,
      ]),
    ),
  );
  await app.close();
  await Promise.all([queue.close(), subscriptions.close(), store.close()]);
});
