import type { OpenAPIV3_1 } from 'openapi-types';
import { CATALOG_ROUTES } from '../../../shared/contract';
import { type Answering, HEADERS, PARAMETERS, responseHeaders } from './response-headers';

type Document = OpenAPIV3_1.Document;
type Operation = OpenAPIV3_1.OperationObject;
type Response = OpenAPIV3_1.ResponseObject;

const ref = (kind: 'parameters' | 'responses' | 'schemas', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});

function errorResponse(description: string, status: string, answering: Answering): Response {
  return {
    description,
    headers: responseHeaders(status, answering),
    content: { 'application/json': { schema: ref('schemas', 'Error') } },
  };
}

/** What the gateway itself may answer to any keyed request, before or instead of the catalog. */
const KEYED = { keyed: true, proxied: false, cacheable: false };
const GATEWAY_RESPONSES: Record<string, Response> = {
  Unauthorized: errorResponse(
    'No `x-api-key` header, or the key is unknown, malformed or revoked',
    '401',
    KEYED,
  ),
  Forbidden: errorResponse(
    "A restricted key lacks the endpoint's scope, or is used from an address it does not allow (then without the rate-limit headers); or the key's tier is below the endpoint's",
    '403',
    KEYED,
  ),
  QuotaExceeded: errorResponse(
    "The key's daily quota is used up until 00:00 UTC; or too many unknown keys came from the client's address (then without the rate-limit headers)",
    '429',
    KEYED,
  ),
  BadGateway: errorResponse('The catalog service failed to answer', '502', KEYED),
  ServiceUnavailable: errorResponse(
    'The catalog service is unreachable, API keys cannot be checked (then without the rate-limit headers), or nothing can be stored for now (Retry-After)',
    '503',
    KEYED,
  ),
  GatewayTimeout: errorResponse('The catalog service did not answer in time', '504', KEYED),
  NotModified: {
    description:
      'The answer is unchanged since the ETag in `If-None-Match`: no body, and no unit of the quota taken',
    headers: responseHeaders('304', { keyed: true, proxied: true, cacheable: true }),
  },
};
const KEYED_STATUSES = {
  401: 'Unauthorized',
  403: 'Forbidden',
  429: 'QuotaExceeded',
  503: 'ServiceUnavailable',
};
/** Only an operation the catalog answers can meet its failures. */
const PROXIED_STATUSES = {
  502: 'BadGateway',
  504: 'GatewayTimeout',
};

/** How an operation is answered: by the gateway alone, or by the catalog through its proxy. */
function answering(path: string, method: string, operation: Operation): Answering {
  const url = path.replace(/\{(\w+)\}/g, ':$1');
  const route = CATALOG_ROUTES.find((r) => r.url === url && r.method === method.toUpperCase());
  return {
    keyed: operation.security?.length !== 0,
    proxied: route !== undefined,
    cacheable: route?.cacheable === true,
  };
}

/**
 * An operation as the gateway answers it: every response with its headers (`responseHeaders`,
 * after any the route declares itself); a keyed one with the gateway's own responses; a
 * cacheable one with `If-None-Match` and its 304.
 */
function asServed(operation: Operation, how: Answering): Operation {
  const responses: OpenAPIV3_1.ResponsesObject = {};
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    const own = 'headers' in response ? response.headers : {};
    responses[status] = { ...response, headers: { ...own, ...responseHeaders(status, how) } };
  }
  if (how.cacheable) responses['304'] = ref('responses', 'NotModified');
  const gatewayStatuses = {
    ...(how.keyed && KEYED_STATUSES),
    ...(how.keyed && how.proxied && PROXIED_STATUSES),
  };
  for (const [status, name] of Object.entries(gatewayStatuses)) {
    responses[status] ??= ref('responses', name);
  }
  const parameters = [
    ...(operation.parameters ?? []),
    ref('parameters', 'RequestId'),
    ...(how.cacheable ? [ref('parameters', 'IfNoneMatch')] : []),
  ];
  return { ...operation, parameters, responses };
}

function info(publicUrl: string): OpenAPIV3_1.InfoObject {
  return {
    title: 'Tool Directory API',
    version: '1.0.0',
    description: [
      'A catalog of AI tools, frameworks and platforms. Send your key in the `x-api-key` header; get one at the [developer portal](/).',
      'Every answer to a keyed request but the 401 carries `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset`, `RateLimit-Policy` and `RateLimit`. Answers that are the same for every key of a tier carry an `ETag`: send it back in `If-None-Match` for a 304 without a body, which takes no unit of the quota.',
      'Enterprise keys can subscribe to webhooks; what each event delivers is under `webhooks`.',
    ].join('\n\n'),
    license: {
      name: 'Proprietary: commercial use needs an Enterprise key; Free-tier use shows the `meta.attribution` credit',
      identifier: 'LicenseRef-Tool-Directory',
    },
    contact: { name: 'Tool Directory', url: `${publicUrl.replace(/\/$/, '')}/` },
  };
}

/**
 * The public document: the gateway's own routes plus the catalog's (and its webhooks), served
 * from one base URL. Its server is this server, relative to the page: the API reference works
 * at whatever address it was opened, PUBLIC_URL or not (a port-forward, 127.0.0.1, localhost).
 */
export function publicDocument(gateway: Document, catalog: Document, publicUrl: string): Document {
  // Both parts come from @fastify/swagger, whose path items hold operations only.
  const paths = Object.fromEntries(
    Object.entries({ ...catalog.paths, ...gateway.paths }).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item ?? {}).map(([method, operation]) => [
          method,
          asServed(operation as Operation, answering(path, method, operation as Operation)),
        ]),
      ),
    ]),
  );
  return {
    ...gateway,
    info: info(publicUrl),
    servers: [
      {
        url: '/',
        description: `This server, at the address the document came from (public address: ${publicUrl})`,
      },
    ],
    paths,
    webhooks: catalog.webhooks,
    components: {
      ...gateway.components,
      schemas: { ...catalog.components?.schemas, ...gateway.components?.schemas },
      headers: HEADERS,
      parameters: PARAMETERS,
      responses: GATEWAY_RESPONSES,
    },
  };
}
