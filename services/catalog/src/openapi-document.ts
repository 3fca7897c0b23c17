import swagger from '@fastify/swagger';
import Fastify from 'fastify';
import type { OpenAPIV3 } from 'openapi-types';
import { openapiOptions } from '../../shared/openapi';
import { catalogRoutes } from './routes';
import { webhookRoutes } from './routes/webhooks';
import type { CatalogStore } from './store/catalog-store';
import type { DeliveryQueue, SubscriptionStore } from './webhooks/webhook-types';

/** A dependency that refuses every call: the handlers never run here. */
function absent<T extends object>(): T {
  return new Proxy({} as T, {
    get: () => {
      throw new Error('the OpenAPI document is generated without stores');
    },
  });
}

/**
 * The catalog's part of the public OpenAPI document, generated from its route schemas by
 * registering its routes in a Fastify instance that never listens. The gateway builds it at
 * start, so its API reference never depends on the catalog being up; both services ship from
 * this repository in one version, so it is the document the catalog's routes describe. The
 * handlers never run: stores that refuse every call stand in for the real ones.
 */
export async function catalogOpenapiDocument(): Promise<OpenAPIV3.Document> {
  const app = Fastify();
  // Only the schemas' documentation is wanted: no validator or serializer is compiled.
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => JSON.stringify);
  await app.register(swagger, openapiOptions());
  await app.register(catalogRoutes, {
    prefix: '/v1',
    store: absent<CatalogStore>(),
    meta: { attribution: '' },
  });
  await app.register(webhookRoutes, {
    prefix: '/v1',
    subscriptions: absent<SubscriptionStore>(),
    queue: absent<DeliveryQueue>(),
    allowPrivate: false,
  });
  await app.ready();
  const document = app.swagger() as OpenAPIV3.Document;
  await app.close();
  return document;
}
