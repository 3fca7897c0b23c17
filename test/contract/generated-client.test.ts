import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { OpenAPIV3_1 } from 'openapi-types';
import { Webhook } from 'standardwebhooks';
import ts from 'typescript';
import { newTool } from '../support/catalog';
import { waitFor } from '../support/ports';
import { scanningProvider } from '../support/secret-scanning';
import { keysCli, startStack, tempDataDir } from '../support/services';
import { type Receiver, startReceiver } from '../support/webhook-receiver';
import { CLIENT_PROGRAM } from './client-program';
import type { ClientResult, ContractContext } from './contract-context';
import { OpenapiConformance, type RecordedAnswer } from './openapi-conformance';
import { PROPAGATION_MS, within } from '../support/waits';

const ROOT = path.resolve(__dirname, '..', '..');
const OPENAPI_TOOLS = path.join(ROOT, 'test/support/openapi-tools.mjs');
const ADMIN_TOKEN = 'contract-test-admin-token';

type Stack = Awaited<ReturnType<typeof startStack>>;
type Recorded = RecordedAnswer & { operationId: string };

/**
 * The OpenAPI document as the whole contract: a TypeScript client generated from the served
 * document (openapi-typescript + openapi-fetch, as a client author would make one) compiles a
 * program that calls every operation against the running stack, and every real answer it gets
 * (status, headers, body), and every webhook delivery the stack sends, is checked against the
 * document with Ajv.
 */
describe('a client generated from GET /openapi.json', () => {
  let stack: Stack;
  let receiver: Receiver;
  let document: OpenAPIV3_1.Document;
  let conformance: OpenapiConformance;
  const dataDir = tempDataDir();
  // Inside the repository (test-output/ is ignored by git), so the program finds openapi-fetch.
  const workDir = path.join(ROOT, 'test-output', `generated-client-${process.pid}`);
  const recorded: Recorded[] = [];
  const scanner = scanningProvider();

  beforeAll(async () => {
    mkdirSync(workDir, { recursive: true });
    receiver = await startReceiver();
    stack = await startStack(
      {
        DATA_DIR: dataDir,
        QUOTA_FREE: '25',
        QUOTA_ENTERPRISE: '40',
        REGISTRATIONS_PER_HOUR: '6',
        SECRET_SCANNING_PUBLIC_KEYS: scanner.publicKeysFile,
      },
      { DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE: 'true', ADMIN_TOKEN },
    );
    const served = await fetch(`${stack.gateway.url}/openapi.json`);
    document = (await served.json()) as OpenAPIV3_1.Document;
    conformance = new OpenapiConformance(document);
  });

  afterAll(async () => {
    await stack?.stop();
    await receiver?.close();
    rmSync(workDir, { recursive: true, force: true });
  });

  test('is generated, compiles strictly with the program that uses it, and the program runs', async () => {
    const documentPath = path.join(workDir, 'openapi.json');
    writeFileSync(documentPath, JSON.stringify(document));
    await promisify(execFile)(process.execPath, [
      OPENAPI_TOOLS,
      'types',
      documentPath,
      path.join(workDir, 'api.ts'),
    ]);
    const programPath = path.join(workDir, 'program.ts');
    writeFileSync(programPath, CLIENT_PROGRAM);

    const program = ts.createProgram([programPath], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
      types: [],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
      const at = d.file ? `${path.basename(d.file.fileName)}:${d.start}: ` : '';
      return at + ts.flattenDiagnosticMessageText(d.messageText, '\n');
    });
    expect(diagnostics).toEqual([]);

    const keys = { free: '', pro: '', enterprise: '' };
    for (const tier of ['free', 'pro', 'enterprise'] as const) {
      const created = (await keysCli(
        ['create', '--tier', tier, '--email', `${tier}@contract.example`, '--name', tier],
        { DATA_DIR: dataDir },
      )) as { apiKey: string };
      keys[tier] = created.apiKey;
    }
    const eventsOf = (type: string) =>
      receiver.requests.filter((r) => (JSON.parse(r.body) as { type: string }).type === type);
    const context: ContractContext = {
      baseUrl: stack.gateway.url,
      keys,
      receiverUrl: receiver.url,
      record(operationId: string, { response, data, error }: ClientResult) {
        recorded.push({
          operationId,
          status: response.status,
          headers: response.headers,
          body: data ?? error,
        });
      },
      received: (type) => eventsOf(type).length > 0,
      leakReportHeaders: (body) => ({
        'github-public-key-identifier': scanner.identifier,
        'github-public-key-signature': scanner.sign(body),
      }),
      async waitForEvent(type) {
        await waitFor(async () => (eventsOf(type).length > 0 ? true : undefined), {
          what: `a ${type} delivery`,
          // Dispatched within a second, at the outbox's poll if not announced.
          timeoutMs: within(PROPAGATION_MS),
        });
      },
      async changeCatalog() {
        const admin = (method: string, body?: unknown) =>
          fetch(`${stack.catalog.url}/admin/v1/tools/contract-tool`, {
            method,
            headers: {
              authorization: `Bearer ${ADMIN_TOKEN}`,
              ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
        const tool = newTool({ slug: 'contract-tool', name: 'Contract Tool' });
        expect((await admin('PUT', tool)).status).toBe(201);
        await context.waitForEvent('tool.created');
        expect((await admin('PUT', { ...tool, pricing: 'Changed pricing' })).status).toBe(200);
        await context.waitForEvent('tool.updated');
        expect((await admin('DELETE')).status).toBe(204);
        await context.waitForEvent('tool.deleted');
      },
      async stopCatalog() {
        await stack.catalog.stop();
      },
    };
    const { callEveryOperation } = (await import(programPath)) as {
      callEveryOperation(ctx: ContractContext): Promise<void>;
    };
    await callEveryOperation(context);
  }, 120_000);

  test('calls every operation, and brings about each kind of answer', () => {
    expect([...new Set(recorded.map((r) => r.operationId))].sort()).toEqual(
      [...conformance.operationIds].sort(),
    );
    const statuses = new Set(recorded.map((r) => `${r.operationId} ${r.status}`));
    for (const expected of [
      'register 201',
      'register 400',
      'register 409',
      'register 413',
      'register 415',
      'register 429',
      'listTools 200',
      'listTools 304',
      'listTools 400',
      'listTools 401',
      'getTool 200',
      'getTool 304',
      'getTool 400',
      'getTool 404',
      'getToolHistory 200',
      'getToolHistory 304',
      'getToolHistory 400',
      'getToolHistory 404',
      'listChanges 200',
      'listChanges 400',
      'listChanges 410',
      'listCategories 200',
      'listCategories 304',
      'listCategories 429',
      'searchTools 200',
      'searchTools 400',
      'compareTools 200',
      'compareTools 400',
      'compareTools 403',
      'compareTools 404',
      'exportTools 200',
      'exportTools 400',
      'exportTools 403',
      'createWebhook 201',
      'createWebhook 400',
      'createWebhook 403',
      'listWebhooks 200',
      'listWebhooks 403',
      'getWebhook 200',
      'getWebhook 403',
      'getWebhook 404',
      'testWebhook 202',
      'testWebhook 404',
      'listWebhookDeliveries 200',
      'listWebhookDeliveries 404',
      'deleteWebhook 204',
      'deleteWebhook 403',
      'deleteWebhook 404',
      'getUsage 200',
      'getUsage 401',
      'getSearchUsage 200',
      'getSearchUsage 400',
      'getSearchUsage 401',
      'rollKey 201',
      'rollKey 400',
      'rollKey 401',
      'rollKey 403',
      'listKeyEvents 200',
      'listKeyEvents 401',
      'reportLeakedKeys 200',
      'reportLeakedKeys 401',
      'reportLeakedKeys 413',
      'sendMcpMessage 200',
      'sendMcpMessage 202',
      'sendMcpMessage 400',
      'sendMcpMessage 401',
      'sendMcpMessage 406',
      'sendMcpMessage 413',
      'sendMcpMessage 415',
      'sendMcpMessage 429',
    ]) {
      expect([...statuses]).toContain(expected);
    }
    const exports = recorded.filter((r) => r.operationId === 'exportTools' && r.status === 200);
    expect(exports.map((r) => r.headers.get('content-type')?.split(';')[0]).sort()).toEqual([
      'application/json',
      'application/x-ndjson',
      'text/csv',
    ]);
    const listed = recorded.filter((r) => r.operationId === 'listTools');
    expect(listed[0]!.headers.get('x-request-id')).toBe('contract-list');
    // The catalog stopped: refused (503) or cut off (502), as the gateway saw it.
    expect([502, 503]).toContain(listed.at(-1)!.status);
  });

  test('every answer is what the document says: status, headers and body', () => {
    expect(recorded.length).toBeGreaterThan(50);
    const problems = recorded.flatMap((r) => conformance.answer(r.operationId, r));
    expect(problems).toEqual([]);
  });

  test('every webhook delivery is one the document describes, signed as its headers say', () => {
    const types = receiver.requests.map((r) => (JSON.parse(r.body) as { type: string }).type);
    expect([...new Set(types)].sort()).toEqual(Object.keys(document.webhooks ?? {}).sort());
    const problems = receiver.requests.flatMap((r) => conformance.delivery(r));
    expect(problems).toEqual([]);

    const created = recorded.find((r) => r.operationId === 'createWebhook' && r.status === 201);
    const webhook = new Webhook((created!.body as { secret: string }).secret);
    for (const delivery of receiver.requests.filter(
      (r) => r.url === new URL(receiver.url).pathname,
    )) {
      expect(() =>
        webhook.verify(delivery.body, delivery.headers as Record<string, string>),
      ).not.toThrow();
    }
  });

  test('the check is no formality: a document that misdescribes an answer or an event fails it', () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const wrong = structuredClone(document) as any;
    // The export as it was once described: one tool object, not a stream of lines.
    wrong.paths['/v1/export'].get.responses['200'].content['application/x-ndjson'].schema = {
      $ref: '#/components/schemas/PaidTool',
    };
    delete wrong.paths['/v1/tools'].get.responses['200'].headers.ETag;
    delete wrong.paths['/v1/tools/{slug}'].get.responses['304'];
    wrong.components.headers['X-Cache'].required = true;
    wrong.components.headers['X-RateLimit-Remaining'].schema.maximum = 0;
    wrong.components.schemas.PingEvent.properties.data.properties.webhookId.type = 'integer';
    const strict = new OpenapiConformance(wrong);
    const problems = [
      ...recorded.flatMap((r) => strict.answer(r.operationId, r)),
      ...receiver.requests.flatMap((r) => strict.delivery(r)),
    ].join('\n');
    expect(problems).toContain('exportTools 200: (body) must be object');
    expect(problems).toContain('listTools 200: header etag is not documented');
    expect(problems).toContain('getTool 304: the status is not documented');
    expect(problems).toContain('compareTools 403: required header x-cache is missing');
    expect(problems).toMatch(/listTools 200 header x-ratelimit-remaining: \(body\) must be <= 0/);
    expect(problems).toContain('webhook ping: /data/webhookId must be integer');
  });
});
