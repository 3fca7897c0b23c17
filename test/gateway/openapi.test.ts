import SwaggerParser from '@apidevtools/swagger-parser';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import type { OpenAPIV3 } from 'openapi-types';
import ts from 'typescript';
import { issueKey } from '../../gateway/src/keys/issue-key';
import { TEST_INTERNAL_TOKEN, buildTestCatalog } from '../support/catalog';
import { inProcessGateway, registerInProcess } from '../support/gateway';
import { freePort } from '../support/ports';

const ROOT = path.resolve(__dirname, '..', '..');
const OPENAPI_TOOLS = path.join(ROOT, 'test/support/openapi-tools.mjs');
// What a deployment serves: Redocly's recommended rules flag a localhost server URL.
const PUBLIC_URL = 'https://api.tool-directory.test';

type Gateway = Awaited<ReturnType<typeof inProcessGateway>>;
type Problem = { severity: string; ruleId: string; message: string; pointer?: string };

/** Scratch files: the document, the types generated from it, the client using them. */
const workDir = mkdtempSync(path.join(tmpdir(), 'td-openapi-'));

async function openapiTool(command: 'lint' | 'types', ...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [OPENAPI_TOOLS, command, ...args]);
  return stdout;
}

function operations(document: OpenAPIV3.Document) {
  return Object.entries(document.paths).flatMap(([url, item]) =>
    Object.entries(item ?? {}).map(([method, operation]) => ({
      name: `${method.toUpperCase()} ${url}`,
      operation: operation as OpenAPIV3.OperationObject,
    })),
  );
}

/** The public OpenAPI document as the gateway serves it, with a real catalog behind it. */
describe('GET /openapi.json', () => {
  let catalog: FastifyInstance;
  let gateway: Gateway;
  let document: OpenAPIV3.Document;
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
    const problems = JSON.parse(
      await openapiTool('lint', documentPath, path.join(ROOT, 'redocly.yaml')),
    ) as Problem[];
    expect(problems).toEqual([]);
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
      ]),
    );
    expect(
      Object.fromEntries(operations(document).map((o) => [o.name, o.operation.operationId])),
    ).toEqual({
      'GET /v1/tools': 'listTools',
      'GET /v1/tools/{slug}': 'getTool',
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
    const required = operations(document).flatMap(({ name, operation }) =>
      ((operation.parameters ?? []) as OpenAPIV3.ParameterObject[])
        .filter((p) => p.in === 'query' && p.required)
        .map((p) => `${name} ${p.name}`),
    );
    expect(required).toEqual(['GET /v1/search q']);
  });

  test('documents updatedAt on every tier’s tool, and updatedSince and the updatedAt sorts on /v1/tools', () => {
    const schemas = document.components?.schemas as Record<string, OpenAPIV3.SchemaObject>;
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
    const list = document.paths['/v1/tools']!.get!;
    const parameters = list.parameters as OpenAPIV3.ParameterObject[];
    expect(parameters.find((p) => p.name === 'updatedSince')).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'string', format: 'date-time' },
      description: expect.stringContaining('changed after this instant'),
    });
    const sort = parameters.find((p) => p.name === 'sort')!.schema as OpenAPIV3.SchemaObject;
    expect(sort.anyOf!.map((value) => (value as OpenAPIV3.SchemaObject).enum![0])).toEqual([
      'name',
      '-name',
      'rating',
      '-rating',
      'updatedAt',
      '-updatedAt',
    ]);
  });

  test('documents every error status an operation can answer', () => {
    const statuses = Object.fromEntries(
      operations(document).map(({ name, operation }) => [
        name,
        Object.keys(operation.responses).join(' '),
      ]),
    );
    expect(statuses).toEqual({
      'GET /v1/tools': '200 400 401 429 502 503 504',
      'GET /v1/tools/{slug}': '200 400 401 404 429 502 503 504',
      'GET /v1/categories': '200 401 429 502 503 504',
      'GET /v1/search': '200 400 401 429 502 503 504',
      'GET /v1/compare/{tool1}/{tool2}': '200 400 401 403 404 429 502 503 504',
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

  test('declares exactly the rate-limit headers a keyed response carries', async () => {
    const key = await registerInProcess(gateway.app, `headers-${Date.now()}@example.com`);
    const cases = [
      ['/v1/tools', '/v1/tools?limit=1', '200'],
      ['/v1/tools/{slug}', '/v1/tools/no-such-tool', '404'],
      ['/v1/tools', '/v1/tools?limit=0', '400'],
    ] as const;
    for (const [template, url, status] of cases) {
      const real = await gateway.app.inject({ url, headers: { 'x-api-key': key } });
      expect(String(real.statusCode)).toBe(status);
      const sent = Object.keys(real.headers).filter((h) => /ratelimit/i.test(h));
      const response = document.paths[template]!.get!.responses[status] as OpenAPIV3.ResponseObject;
      const declared = Object.keys(response.headers ?? {}).map((h) => h.toLowerCase());
      expect(declared.sort()).toEqual(sent.sort());
    }
    const quota = document.components?.responses?.QuotaExceeded as OpenAPIV3.ResponseObject;
    expect(Object.keys(quota.headers ?? {})).toContain('Retry-After');
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

  test('generates a TypeScript client that types real responses and refuses wrong parameters', async () => {
    const typesPath = path.join(workDir, 'api.ts');
    await openapiTool('types', documentPath, typesPath);

    const free = await registerInProcess(gateway.app, `client-${Date.now()}@example.com`);
    const { apiKey: pro } = await issueKey(gateway.deps.keyStore, {
      tier: 'pro',
      email: `client-pro-${Date.now()}@example.com`,
      name: 'Pro',
      useCase: '',
    });
    const body = async (url: string, key: string, status = 200) => {
      const response = await gateway.app.inject({ url, headers: { 'x-api-key': key } });
      expect(response.statusCode).toBe(status);
      return response.body;
    };
    const registration = await gateway.app.inject({
      method: 'POST',
      url: '/v1/register',
      payload: { email: `client-typed-${Date.now()}@example.com`, name: 'Typed' },
    });

    const clientPath = path.join(workDir, 'client.ts');
    writeFileSync(
      clientPath,
      `import type { paths } from './api';

type Json<R> = R extends { content: { 'application/json': infer T } } ? T : never;
type Get<P extends keyof paths, S extends number> = paths[P] extends {
  get: { responses: Record<S, infer R> };
}
  ? Json<R>
  : never;

export const freeList: Get<'/v1/tools', 200> = ${await body('/v1/tools?limit=2', free)};
export const paidList: Get<'/v1/tools', 200> = ${await body('/v1/tools?limit=2', pro)};
export const detail: Get<'/v1/tools/{slug}', 200> = ${await body('/v1/tools/langchain', pro)};
export const hits: Get<'/v1/search', 200> = ${await body('/v1/search?q=vector', free)};
export const categories: Get<'/v1/categories', 200> = ${await body('/v1/categories', free)};
export const comparison: Get<'/v1/compare/{tool1}/{tool2}', 200> =
  ${await body('/v1/compare/langchain/llamaindex', pro)};
export const notFound: Get<'/v1/tools/{slug}', 404> = ${await body('/v1/tools/nope', free, 404)};
export const registered: Json<paths['/v1/register']['post']['responses'][201]> =
  ${registration.body};

type ListQuery = NonNullable<paths['/v1/tools']['get']['parameters']['query']>;
export const defaults: ListQuery = {};
export const chosen: ListQuery = { page: 2, limit: 10, sort: '-rating', category: 'llm-frameworks' };
export const synced: ListQuery = { sort: 'updatedAt', updatedSince: '2025-06-30T12:00:00Z' };
// @ts-expect-error sort is one of the documented orders
export const unknownSort: ListQuery = { sort: 'updated' };
// @ts-expect-error limit is a number
export const wrong: ListQuery = { limit: 'ten' };
`,
    );

    const program = ts.createProgram([clientPath], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ['lib.es2022.d.ts'],
      types: [],
    });
    const diagnostics = ts
      .getPreEmitDiagnostics(program)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(diagnostics).toEqual([]);
  }, 60_000);

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
