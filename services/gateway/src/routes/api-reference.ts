import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { catalogOpenapiDocument } from '../../../catalog/src/schemas/openapi-document';
import { openapiOptions } from '../../../shared/openapi';
import { publicDocument } from '../api-reference/public-document';

/** Where the reference page and its files are served; public (deny-by-default.ts). */
export const API_REFERENCE_PREFIX = '/docs';

export interface ApiReferenceOptions {
  publicUrl: string;
}

/** The product's name as the reference page's logo, in place of Fastify's. */
const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="230" height="40" viewBox="0 0 230 40"><text x="0" y="27" font-family="sans-serif" font-size="22" font-weight="700" fill="#fff">Tool Directory API</text></svg>`;

/**
 * The reference page's own files only, and requests to its own origin: "Try it out" calls the
 * API at the address the page was opened at (the document's server is relative). No inline
 * code, no third-party origin, no plugin, no framing by other sites. No
 * `upgrade-insecure-requests` either: on a page served over plain HTTP away from loopback (a LAN
 * address) it would turn the page's own requests into https ones, which fail.
 */
const CONTENT_SECURITY_POLICY = {
  'default-src': ["'self'"],
  'base-uri': ["'self'"],
  'connect-src': ["'self'"],
  'font-src': ["'self'", 'data:'],
  'form-action': ["'self'"],
  'frame-ancestors': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'object-src': ["'none'"],
  'script-src': ["'self'"],
  'script-src-attr': ["'none'"],
  // Swagger UI's own logo (shown until ours replaces it) carries this one inline style.
  'style-src': ["'self'", "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='"],
};

/**
 * The public API reference: `GET /openapi.json` and Swagger UI at `/docs`. The catalog's part
 * is generated here at start from the catalog's route schemas (both services ship from this
 * repository in one version), so the document is whole whether or not the catalog is up.
 */
export const apiReferenceRoutes = fp<ApiReferenceOptions>(
  async function apiReference(app: FastifyInstance, { publicUrl }) {
    const catalog = await catalogOpenapiDocument();
    await app.register(
      swagger,
      openapiOptions(
        {
          components: {
            securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
          },
          security: [{ apiKey: [] }],
        },
        (gateway) => publicDocument(gateway, catalog, publicUrl),
      ),
    );
    await app.register(swaggerUi, {
      routePrefix: API_REFERENCE_PREFIX,
      uiConfig: { docExpansion: 'list', deepLinking: true },
      staticCSP: CONTENT_SECURITY_POLICY,
      theme: { title: 'Tool Directory API reference' },
      logo: { type: 'image/svg+xml', content: LOGO },
    });

    app.get('/openapi.json', { schema: { hide: true }, config: { public: true } }, async () =>
      app.swagger(),
    );
  },
  { name: 'api-reference' },
);
