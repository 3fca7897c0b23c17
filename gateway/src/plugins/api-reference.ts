import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { OpenAPIV3 } from 'openapi-types';
import { catalogOpenapiDocument } from '../../../services/catalog/src/openapi-document';
import { openapiOptions } from '../../../services/shared/openapi';

export interface ApiReferenceOptions {
  publicUrl: string;
}

type Document = OpenAPIV3.Document;
type Responses = OpenAPIV3.ResponsesObject;

const ref = (kind: 'headers' | 'responses' | 'schemas', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});

/** SPEC B4: on every response to a request that carries a valid key, whatever its status. */
const RATE_LIMIT_HEADERS: Record<string, OpenAPIV3.HeaderObject> = {
  'X-RateLimit-Limit': { description: "The key's daily quota", schema: { type: 'integer' } },
  'X-RateLimit-Remaining': {
    description: 'Units left after this request, never negative',
    schema: { type: 'integer', minimum: 0 },
  },
  'X-RateLimit-Reset': {
    description: 'Unix time in seconds of the next 00:00:00 UTC',
    schema: { type: 'integer' },
  },
  'RateLimit-Policy': {
    description: 'IETF draft field: `"daily";q=<quota>;w=86400`',
    schema: { type: 'string', example: '"daily";q=100;w=86400' },
  },
  RateLimit: {
    description: 'IETF draft field: `"daily";r=<remaining>;t=<seconds to reset>`',
    schema: { type: 'string', example: '"daily";r=99;t=68865' },
  },
};
const HEADERS: Record<string, OpenAPIV3.HeaderObject> = {
  ...RATE_LIMIT_HEADERS,
  'Retry-After': {
    description: 'Seconds until the limit that was hit resets',
    schema: { type: 'integer', minimum: 1 },
  },
};
const RATE_LIMIT_HEADER_REFS = Object.fromEntries(
  Object.keys(RATE_LIMIT_HEADERS).map((name) => [name, ref('headers', name)]),
);
const RETRY_AFTER = { 'Retry-After': ref('headers', 'Retry-After') };

function errorResponse(
  description: string,
  headers?: OpenAPIV3.ResponseObject['headers'],
): OpenAPIV3.ResponseObject {
  return {
    description,
    ...(headers && { headers }),
    content: { 'application/json': { schema: ref('schemas', 'Error') } },
  };
}

/** What the gateway itself may answer to any keyed request, before or instead of the catalog. */
const GATEWAY_RESPONSES: Record<string, OpenAPIV3.ResponseObject> = {
  Unauthorized: errorResponse('No `x-api-key` header, or the key is unknown, malformed or revoked'),
  QuotaExceeded: errorResponse("The key's daily quota is used up until 00:00 UTC", {
    ...RATE_LIMIT_HEADER_REFS,
    ...RETRY_AFTER,
  }),
  BadGateway: errorResponse('The catalog service failed to answer', RATE_LIMIT_HEADER_REFS),
  ServiceUnavailable: errorResponse(
    'The catalog service is unreachable, or API keys cannot be checked (then without the rate-limit headers)',
    RATE_LIMIT_HEADER_REFS,
  ),
  GatewayTimeout: errorResponse(
    'The catalog service did not answer in time',
    RATE_LIMIT_HEADER_REFS,
  ),
};
const KEYED_STATUSES = {
  401: 'Unauthorized',
  429: 'QuotaExceeded',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
  504: 'GatewayTimeout',
};

/**
 * An operation as the gateway answers it. A keyed one (no `security: []`) gains the gateway's
 * own responses, and the rate-limit headers on every response but the 401; a 429 says
 * `Retry-After` either way.
 */
function throughGateway(operation: OpenAPIV3.OperationObject): OpenAPIV3.OperationObject {
  const keyed = operation.security?.length !== 0;
  const responses: Responses = {};
  for (const [status, response] of Object.entries(operation.responses)) {
    const headers = {
      ...('headers' in response ? response.headers : {}),
      ...(keyed ? RATE_LIMIT_HEADER_REFS : {}),
      ...(status === '429' ? RETRY_AFTER : {}),
    };
    responses[status] = Object.keys(headers).length > 0 ? { ...response, headers } : response;
  }
  if (keyed) {
    for (const [status, name] of Object.entries(KEYED_STATUSES)) {
      responses[status] ??= ref('responses', name);
    }
  }
  return { ...operation, responses };
}

/** The public document: the gateway's own routes plus the catalog's, served from one base URL. */
function publicDocument(gateway: Document, catalog: Document, publicUrl: string): Document {
  // Both parts come from @fastify/swagger, whose path items hold operations only.
  const paths = Object.fromEntries(
    Object.entries({ ...catalog.paths, ...gateway.paths }).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item ?? {}).map(([method, operation]) => [
          method,
          throughGateway(operation as OpenAPIV3.OperationObject),
        ]),
      ),
    ]),
  );
  return {
    ...gateway,
    servers: [{ url: publicUrl }],
    paths,
    components: {
      ...gateway.components,
      schemas: { ...catalog.components?.schemas, ...gateway.components?.schemas },
      headers: HEADERS,
      responses: GATEWAY_RESPONSES,
    },
  };
}

/** The product's name as the reference page's logo, in place of Fastify's. */
const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="230" height="40" viewBox="0 0 230 40"><text x="0" y="27" font-family="sans-serif" font-size="22" font-weight="700" fill="#fff">Tool Directory API</text></svg>`;

/**
 * The public API reference: `GET /openapi.json` and Swagger UI at `/docs`. The catalog's part
 * is generated here at start from the catalog's route schemas (both services ship from this
 * repository in one version), so the document is whole whether or not the catalog is up.
 */
export const apiReferencePlugin = fp<ApiReferenceOptions>(
  async function apiReference(app: FastifyInstance, { publicUrl }) {
    const catalog = await catalogOpenapiDocument();
    await app.register(
      swagger,
      openapiOptions(
        {
          info: {
            title: 'Tool Directory API',
            version: '1.0.0',
            description:
              'A catalog of AI tools, frameworks and platforms. Send your key in the `x-api-key` header; register at the developer portal (`/`). Every keyed response carries `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset`, `RateLimit-Policy` and `RateLimit`.',
          },
          components: {
            securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
          },
          security: [{ apiKey: [] }],
        },
        (gateway) => publicDocument(gateway, catalog, publicUrl),
      ),
    );
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { docExpansion: 'list', deepLinking: true },
      staticCSP: true,
      theme: { title: 'Tool Directory API reference' },
      logo: { type: 'image/svg+xml', content: LOGO },
    });

    app.get('/openapi.json', { schema: { hide: true }, config: { public: true } }, async () =>
      app.swagger(),
    );
  },
  { name: 'api-reference' },
);
