import SwaggerParser from '@apidevtools/swagger-parser';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import type { OpenAPIV3_1 } from 'openapi-types';
import { SUBSCRIBABLE_EVENTS } from '../../../services/catalog/src/webhooks/webhook-types';
import { TEST_INTERNAL_TOKEN, buildTestCatalog } from '../../support/catalog';
import { inProcessGateway, registerInProcess } from '../../support/gateway';
import { freePort } from '../../support/ports';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const OPENAPI_TOOLS = path.join(ROOT, 'test/support/openapi-tools.mjs');
// A deployment's public address, which the document names (its server stays relative).
const PUBLIC_URL = 'https://api.tool-directory.test';

type Gateway = Awaited<ReturnType<typeof inProcessGateway>>;
type Problem = { severity: string; ruleId: string; message: string; pointer?: string };

/** Scratch files: the document for Redocly (test/contract/ generates a client from it). */
const workDir = mkdtempSync(path.join(tmpdir(), 'td-openapi-'));

async function lint(documentPath: string, configPath: string): Promise<Problem[]> {
  const { stdout } = await promisify(execFile)(process.execPath, [
    OPENAPI_TOOLS,
    'lint',
    documentPath,
    configPath,
  ]);
  return JSON.parse(stdout) as Problem[];
}

function operations(document: OpenAPIV3_1.Document) {
  return Object.entries(document.paths ?? {}).flatMap(([url, item]) =>
    Object.entries(item ?? {}).map(([method, operation]) => ({
      name: `${method.toUpperCase()} ${url}`,
      operation: operation as OpenAPIV3_1.OperationObject,
    })),
  );
}

/** The public OpenAPI document as the gateway serves it, with a real catalog behind it. */
describe('GET /openapi.json', () => {
  let catalog: FastifyInstance;
  let gateway: Gateway;
  let document: OpenAPIV3_1.Document;
  let documentPath: string;

  beforeAll(async () => {
    catalog = await buildTestCatalog();
    await catalog.listen({ port: 0, host: '127.0.0.1' });
    const { port } = catalog.server.address() as { port: number };
    gateway = await inProcessGateway({
      CATALOG_URL: `http://127.0.0.1:${port}`,
      INTERNAL_TOKEN: TEST_INTERNAL_TOKEN,
      PUBLIC_URL,
    });
    const response = await gateway.app.inject({ url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    document = response.json();
    documentPath = path.join(workDir, 'openapi.json');
    writeFileSync(documentPath, response.body);
  });

  afterAll(async () => {
    await gateway.close();
    await catalog.close();
    rmSync(workDir, { recursive: true, force: true });
  });

  test('is valid OpenAPI 3 to swagger-parser', async () => {
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeTruthy();
  });

  test("has no errors and no warnings under Redocly's recommended rules (redocly.yaml)", async () => {
    expect(await lint(documentPath, path.join(ROOT, 'redocly.yaml'))).toEqual([]);
  }, 60_000);

  test('names its schemas and every operation', () => {
    expect(Object.keys(document.components?.schemas ?? {})).toEqual(
      expect.arrayContaining([
        'Tool',
        'PaidTool',
        'ToolList',
        'PaidToolList',
        'SearchHit',
        'PaidSearchHit',
        'Category',
        'CategoryList',
        'Comparison',
        'ComparisonResult',
        'Error',
        'Registration',
        'RegistrationRequest',
        'WebhookRequest',
        'Webhook',
        'CreatedWebhook',
        'WebhookList',
        'QueuedEvent',
        'DeliveryAttempt',
        'DeliveryAttemptList',
        'ToolCreatedEvent',
        'ToolUpdatedEvent',
        'ToolDeletedEvent',
        'QuotaWarningEvent',
        'PingEvent',
      ]),
    );
    expect(
      Object.fromEntries(operations(document).map((o) => [o.name, o.operation.operationId])),
    ).toEqual({
      'GET /v1/tools': 'listTools',
      'GET /v1/tools/{slug}': 'getTool',
      'GET /v1/tools/{slug}/history': 'getToolHistory',
      'GET /v1/changes': 'listChanges',
      'GET /v1/usage': 'getUsage',
      'GET /v1/usage/searches': 'getSearchUsage',
      'POST /v1/keys/leaks': 'reportLeakedKeys',
      'GET /v1/keys/events': 'listKeyEvents',
      'POST /v1/keys/roll': 'rollKey',
      'POST /v1/mcp': 'sendMcpMessage',
      'GET /v1/categories': 'listCategories',
      'GET /v1/search': 'searchTools',
      'GET /v1/compare/{tool1}/{tool2}': 'compareTools',
      'GET /v1/export': 'exportTools',
      'POST /v1/webhooks': 'createWebhook',
      'GET /v1/webhooks': 'listWebhooks',
      'GET /v1/webhooks/{id}': 'getWebhook',
      'DELETE /v1/webhooks/{id}': 'deleteWebhook',
      'POST /v1/webhooks/{id}/test': 'testWebhook',
      'GET /v1/webhooks/{id}/deliveries': 'listWebhookDeliveries',
      'POST /v1/register': 'register',
    });
  });

  test('carries no validator-only keyword, and parameters with defaults are optional', () => {
    expect(JSON.stringify(document)).not.toContain('"transform"');
    expect(JSON.stringify(document)).not.toContain('"normalize"');
    const required = operations(document).flatMap(({ name, operation }) =>
      ((operation.parameters ?? []) as OpenAPIV3_1.ParameterObject[])
        .filter((p) => p.in === 'query' && p.required)
        .map((p) => `${name} ${p.name}`),
    );
    expect(required).toEqual(['GET /v1/search q']);
  });

  test('documents updatedAt on every tier’s tool, and updatedSince and the updatedAt sorts on /v1/tools', () => {
    const schemas = document.components?.schemas as Record<string, OpenAPIV3_1.SchemaObject>;
    for (const name of ['Tool', 'PaidTool', 'SearchHit', 'PaidSearchHit']) {
      expect([name, schemas[name]!.required]).toEqual([
        name,
        expect.arrayContaining(['updatedAt']),
      ]);
      expect(schemas[name]!.properties!.updatedAt).toMatchObject({
        type: 'string',
        format: 'date-time',
        description: expect.stringContaining('last changed'),
      });
    }
    const list = document.paths!['/v1/tools']!.get!;
    const parameters = list.parameters as OpenAPIV3_1.ParameterObject[];
    expect(parameters.find((p) => p.name === 'updatedSince')).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'string', format: 'date-time' },
      description: expect.stringContaining('changed after this instant'),
    });
    const sort = parameters.find((p) => p.name === 'sort')!.schema as OpenAPIV3_1.SchemaObject;
    expect(sort.anyOf!.map((value: OpenAPIV3_1.SchemaObject) => value.enum![0])).toEqual([
      'name',
      '-name',
      'rating',
      '-rating',
      'updatedAt',
      '-updatedAt',
    ]);
  });

  test('documents source and verifiedAt on every tier’s tool, and verifiedBefore on /v1/tools', () => {
    const schemas = document.components?.schemas as Record<string, OpenAPIV3_1.SchemaObject>;
    for (const name of ['Tool', 'PaidTool', 'SearchHit', 'PaidSearchHit']) {
      expect([name, schemas[name]!.required]).toEqual([
        name,
        expect.arrayContaining(['source', 'verifiedAt']),
      ]);
      expect(schemas[name]!.properties!.source).toMatchObject({
        type: 'string',
        format: 'uri',
        description: expect.stringContaining('checked') as unknown,
      });
      expect(schemas[name]!.properties!.verifiedAt).toMatchObject({
        type: 'string',
        format: 'date-time',
        description: expect.stringContaining('last checked') as unknown,
      });
    }
    const list = document.paths!['/v1/tools']!.get!;
    const parameters = list.parameters as OpenAPIV3_1.ParameterObject[];
    expect(parameters.find((p) => p.name === 'verifiedBefore')).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'string', format: 'date-time' },
      description: expect.stringContaining('last checked before this instant') as unknown,
    });
  });

  test('documents every error status an operation can answer', () => {
    const statuses = Object.fromEntries(
      operations(document).map(({ name, operation }) => [
        name,
        Object.keys(operation.responses ?? {}).join(' '),
      ]),
    );
    expect(statuses).toEqual({
      'GET /v1/tools': '200 304 400 401 403 429 502 503 504',
      'GET /v1/usage': '200 401 403 429 503',
      'GET /v1/usage/searches': '200 400 401 403 429 503',
      'GET /v1/keys/events': '200 401 403 429 503',
      'POST /v1/keys/leaks': '200 400 401 404 413 415 429',
      'POST /v1/keys/roll': '201 400 401 403 409 413 415 429 503',
      'POST /v1/mcp': '200 202 400 401 403 406 413 415 429 503',
      'GET /v1/tools/{slug}': '200 304 400 401 403 404 429 502 503 504',
      'GET /v1/tools/{slug}/history': '200 304 400 401 403 404 429 502 503 504',
      'GET /v1/changes': '200 400 401 403 410 429 502 503 504',
      'GET /v1/categories': '200 304 401 403 429 502 503 504',
      'GET /v1/search': '200 304 400 401 403 429 502 503 504',
      'GET /v1/compare/{tool1}/{tool2}': '200 304 400 401 403 404 429 502 503 504',
      'GET /v1/export': '200 400 401 403 429 502 503 504',
      'POST /v1/webhooks': '201 400 401 403 413 415 429 502 503 504',
      'GET /v1/webhooks': '200 401 403 429 502 503 504',
      'GET /v1/webhooks/{id}': '200 400 401 403 404 429 502 503 504',
      'DELETE /v1/webhooks/{id}': '204 400 401 403 404 429 502 503 504',
      'POST /v1/webhooks/{id}/test': '202 400 401 403 404 409 429 502 503 504',
      'GET /v1/webhooks/{id}/deliveries': '200 400 401 403 404 429 502 503 504',
      'POST /v1/register': '201 400 409 413 415 429',
    });
  });

  test("names no host: its server is the page's own, so the reference works wherever it is opened", () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.servers).toEqual([
      { url: '/', description: expect.stringContaining(PUBLIC_URL) },
    ]);
    expect(document.info.description).toContain('[developer portal](/)');
    expect(document.info.contact).toEqual({ name: 'Tool Directory', url: `${PUBLIC_URL}/` });
    expect(document.info.license).toEqual({
      name: expect.stringMatching(/^Proprietary/),
      identifier: expect.stringMatching(/^LicenseRef-/),
    });
  });

  test('declares every header a real response carries, and the If-None-Match its 304 answers', async () => {
    const key = await registerInProcess(gateway.app, `headers-${Date.now()}@example.com`);
    const contractHeaders = (headers: Record<string, unknown>) =>
      Object.keys(headers)
        .filter((h) => /^(x-|ratelimit|etag$|retry-after$|www-authenticate$)/.test(h))
        .sort();
    const declared = (response: OpenAPIV3_1.ResponseObject | OpenAPIV3_1.ReferenceObject) => {
      const resolved =
        '$ref' in response
          ? (document.components!.responses![
              response.$ref.split('/').pop()!
            ] as OpenAPIV3_1.ResponseObject)
          : response;
      return Object.keys(resolved.headers ?? {})
        .map((h) => h.toLowerCase())
        .sort();
    };
    const tools = await gateway.app.inject({
      url: '/v1/tools?limit=1',
      headers: { 'x-api-key': key },
    });
    const cases = [
      ['/v1/tools', tools, '200'],
      [
        '/v1/tools/{slug}',
        await gateway.app.inject({ url: '/v1/tools/no-such-tool', headers: { 'x-api-key': key } }),
        '404',
      ],
      [
        '/v1/tools',
        await gateway.app.inject({ url: '/v1/tools?limit=0', headers: { 'x-api-key': key } }),
        '400',
      ],
      ['/v1/tools', await gateway.app.inject({ url: '/v1/tools' }), '401'],
      [
        '/v1/tools',
        await gateway.app.inject({
          url: '/v1/tools?limit=1',
          headers: { 'x-api-key': key, 'if-none-match': String(tools.headers.etag) },
        }),
        '304',
      ],
    ] as const;
    for (const [template, real, status] of cases) {
      expect(String(real.statusCode)).toBe(status);
      const operation = document.paths![template]!.get!;
      expect([status, contractHeaders(real.headers)]).toEqual([
        status,
        declared(operation.responses![status]!),
      ]);
      const parameters = (operation.parameters ?? []).map((p) => ('$ref' in p ? p.$ref : p.name));
      expect(parameters).toContain('#/components/parameters/IfNoneMatch');
    }
    expect(tools.headers['x-cache']).toBe('MISS');
  });

  test('describes the export as the streams it is, one media type per format', () => {
    const ok = document.paths!['/v1/export']!.get!.responses!['200'] as OpenAPIV3_1.ResponseObject;
    const content = ok.content!;
    expect(Object.keys(content).sort()).toEqual([
      'application/json',
      'application/x-ndjson',
      'text/csv',
    ]);
    // Generated clients read the NDJSON and CSV streams as text, never as one JSON value.
    expect(content['application/x-ndjson']!.schema).toMatchObject({
      type: 'string',
      contentMediaType: 'application/x-ndjson',
    });
    expect(content['text/csv']!.schema).toMatchObject({
      type: 'string',
      contentMediaType: 'text/csv',
    });
    expect(content['application/json']!.schema).toMatchObject({
      type: 'object',
      properties: { data: { type: 'array' } },
    });
    expect(Object.keys(ok.headers ?? {})).toContain('Content-Disposition');
  });

  test('describes every webhook event under `webhooks`, with its payload and signature headers', () => {
    const webhooks = document.webhooks ?? {};
    expect(Object.keys(webhooks).sort()).toEqual([...SUBSCRIBABLE_EVENTS, 'ping'].sort());
    for (const [type, item] of Object.entries(webhooks)) {
      const delivery = (item as OpenAPIV3_1.PathItemObject).post!;
      const body = delivery.requestBody as OpenAPIV3_1.RequestBodyObject;
      const { $ref } = body.content['application/json']!.schema as OpenAPIV3_1.ReferenceObject;
      const schema = document.components!.schemas![$ref.split('/').pop()!]!;
      expect([type, schema.properties?.type]).toEqual([type, { type: 'string', const: type }]);
      expect((delivery.parameters as OpenAPIV3_1.ParameterObject[]).map((p) => p.name)).toEqual([
        'webhook-id',
        'webhook-timestamp',
        'webhook-signature',
      ]);
    }
  });

  test('is whole while the catalog is down: its part is built from the route schemas', async () => {
    const down = await inProcessGateway({
      CATALOG_URL: `http://127.0.0.1:${await freePort()}`,
      PUBLIC_URL,
    });
    try {
      const response = await down.app.inject({ url: '/openapi.json' });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual(document);
    } finally {
      await down.close();
    }
  });

  test('the reference page has the product title and logo, not Fastify', async () => {
    const page = await gateway.app.inject({ url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<title>Tool Directory API reference</title>');
    const initializer = await gateway.app.inject({ url: '/docs/static/swagger-initializer.js' });
    const logo = initializer.body.match(/data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)/)?.[1];
    const svg = Buffer.from(logo ?? '', 'base64').toString();
    expect(svg).toContain('Tool Directory API');
    expect(svg).not.toMatch(/fastify/i);
  });
});
