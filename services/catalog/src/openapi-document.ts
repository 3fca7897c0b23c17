import swagger from '@fastify/swagger';
import Fastify from 'fastify';
import type { OpenAPIV3 } from 'openapi-types';
import { openapiOptions } from '../../shared/openapi';
import { catalogRoutes } from './routes';
import type { CatalogStore } from './store/catalog-store';

/**
 * The catalog's part of the public OpenAPI document, generated from its route schemas by
 * registering its routes in a Fastify instance that never listens. The gateway builds it at
 * start, so its API reference never depends on the catalog being up; both services ship from
 * this repository in one version, so it is the document the catalog's routes describe. The
 * handlers never run: a store that refuses every call stands in for the real one.
 */
export async function catalogOpenapiDocument(): Promise<OpenAPIV3.Document> {
  const app = Fastify();
  // Only the schemas' documentation is wanted: no validator or serializer is compiled.
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => JSON.stringify);
  await app.register(swagger, openapiOptions());
  await app.register(catalogRoutes, {
    prefix: '/v1',
    store: new Proxy({} as CatalogStore, {
      get: () => {
        throw new Error('the OpenAPI document is generated without a store');
      },
    }),
    meta: { attribution: '' },
  });
  await app.ready();
  const document = app.swagger() as OpenAPIV3.Document;
  await app.close();
  return document;
}
