import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { OpenAPIV3 } from 'openapi-types';
import '../../../services/shared/caller';
import { openapiOptions } from '../../../services/shared/openapi';

export interface ApiReferenceOptions {
  catalogUrl: string;
  publicUrl: string;
}

type Document = OpenAPIV3.Document;

/** The public document: the gateway's own routes plus the catalog's, served from one base URL. */
function merge(gateway: Document, catalog: Document | undefined, publicUrl: string): Document {
  return {
    ...gateway,
    servers: [{ url: publicUrl }],
    paths: { ...catalog?.paths, ...gateway.paths },
    components: {
      ...gateway.components,
      schemas: { ...catalog?.components?.schemas, ...gateway.components?.schemas },
    },
  };
}

/**
 * The public API reference: `GET /openapi.json` and Swagger UI at `/docs`. The catalog's part
 * comes from its own generated document, fetched once it answers and kept for the process's
 * life (both services ship together, so it cannot go stale).
 */
export const apiReferencePlugin = fp<ApiReferenceOptions>(
  async function apiReference(app: FastifyInstance, { catalogUrl, publicUrl }) {
    let catalogDocument: Document | undefined;
    const loadCatalogDocument = async (): Promise<Document | undefined> => {
      if (catalogDocument) return catalogDocument;
      try {
        const response = await fetch(new URL('/openapi.json', catalogUrl), {
          signal: AbortSignal.timeout(2_000),
        });
        if (response.ok) catalogDocument = (await response.json()) as Document;
      } catch (err) {
        app.log.warn({ err }, 'catalog OpenAPI document not available yet');
      }
      return catalogDocument;
    };

    await app.register(
      swagger,
      openapiOptions(
        'A catalog of AI tools, frameworks and platforms. Send your key in the `x-api-key` header; register at the developer portal (`/`). Every keyed response carries `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset`, `RateLimit-Policy` and `RateLimit`.',
      ),
    );
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { docExpansion: 'list', deepLinking: true },
      staticCSP: true,
      transformSpecificationClone: true,
      transformSpecification: (document) => merge(document as Document, catalogDocument, publicUrl),
      uiHooks: {
        onRequest: async () => {
          await loadCatalogDocument();
        },
      },
    });

    app.get('/openapi.json', { schema: { hide: true }, config: { public: true } }, async () =>
      merge(app.swagger() as Document, await loadCatalogDocument(), publicUrl),
    );
  },
  { name: 'api-reference' },
);
