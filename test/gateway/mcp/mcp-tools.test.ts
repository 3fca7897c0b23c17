import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport, type Tool } from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import type { FastifyInstance } from 'fastify';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { OpenAPIV3_1 } from 'openapi-types';
import {
  type CatalogTool,
  type McpSchema,
  descriptionOf,
  tiersOf,
} from '../../../services/gateway/src/mcp/catalog-tool';
import { buildMcpServer } from '../../../services/gateway/src/mcp/mcp-server';
import { CATALOG_TOOLS, INSTRUCTIONS } from '../../../services/gateway/src/mcp/tools';
import type { Upstream } from '../../../services/gateway/src/proxy/read-catalog';
import { MCP_ROUTE } from '../../../services/shared/contract';
import { TIERS, tierAtLeast } from '../../../services/shared/tiers';
import { asTier, buildTestCatalog } from '../../support/catalog';
import { inProcessGateway } from '../../support/gateway';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const TOOLS_DIR = path.join(ROOT, 'services/gateway/src/mcp/tools');
const SERVICES = path.join(ROOT, 'services');

type Json = Record<string, unknown>;

/** What the server's own check of a schema finds wrong with a value; undefined when valid. */
function problem(schema: McpSchema, value: unknown): string | undefined {
  const result = schema['~standard'].validate(value) as { issues?: { message: string }[] };
  return result.issues?.[0]?.message;
}

/** A tool's file: its name in kebab case (`search_tools` in `search-tools.ts`). */
const fileOf = (tool: CatalogTool) => `${tool.name.replaceAll('_', '-')}.ts`;

/** Every TypeScript file under a folder, relative to the repository. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
}

/**
 * Calls of each tool whose answers are checked: between them every record of the dataset, and
 * every tool has some, so a new tool without them fails here rather than going unchecked.
 */
const SAMPLE_CALLS: Record<string, Record<string, unknown>[]> = {
  search_tools: [
    { q: 'vector database', limit: 50 },
    { q: 'agents', category: 'llm-frameworks' },
  ],
  get_tool: [{ slug: 'langchain' }],
  get_tool_history: [{ slug: 'langchain' }],
  list_categories: [{}],
  list_tools: [
    { page: 1, limit: 100 },
    { page: 2, limit: 100 },
  ],
  compare_tools: [{ tool1: 'langchain', tool2: 'llamaindex' }],
};

/**
 * The MCP tools as one list of one file each (services/gateway/src/mcp/tools/): every tool
 * defined in its file and nowhere else, the server's instructions and the route's description
 * written from the list, the guide's table in step with it, and each tool's output schema true
 * to every tier's answer.
 */
describe('MCP tools, one file each', () => {
  let catalog: FastifyInstance;
  let listed: Tool[];

  beforeAll(async () => {
    catalog = await buildTestCatalog();
    // tools/list as the SDK's client receives it; listing runs no tool, so nothing is called.
    const server = buildMcpServer({} as Upstream);
    const client = new Client({ name: 'mcp-tools-test', version: '1.0.0' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    await client.connect(clientSide);
    listed = (await client.listTools()).tools;
    await client.close();
    await server.close();
  });
  afterAll(() => catalog.close());

  test('each tool is defined in a file of its own under mcp/tools/, and every file there is one tool', async () => {
    const names = CATALOG_TOOLS.map((tool) => tool.name);
    expect(new Set(names).size).toBe(names.length);
    const files = readdirSync(TOOLS_DIR)
      .filter((file) => file !== 'index.ts')
      .sort();
    expect(files).toEqual(CATALOG_TOOLS.map(fileOf).sort());
    for (const tool of CATALOG_TOOLS) {
      const exported = Object.values(
        (await import(path.join(TOOLS_DIR, fileOf(tool)))) as Record<string, unknown>,
      );
      expect([fileOf(tool), exported]).toEqual([fileOf(tool), [tool]]);
    }
  });

  test("a tool's name is written in one source file under services/: its own", () => {
    const files = sources(SERVICES).map((file) => ({
      file,
      text: readFileSync(path.join(ROOT, file), 'utf8'),
    }));
    for (const tool of CATALOG_TOOLS) {
      const word = new RegExp(`\\b${tool.name}\\b`);
      const naming = files.filter(({ text }) => word.test(text)).map(({ file }) => file);
      expect([tool.name, naming]).toEqual([
        tool.name,
        [path.relative(ROOT, path.join(TOOLS_DIR, fileOf(tool)))],
      ]);
    }
  });

  test('tools/list, the instructions and the route description name every tool, with the tiers of the route it mirrors', async () => {
    expect(listed.map((tool) => tool.name)).toEqual(CATALOG_TOOLS.map((tool) => tool.name));
    const gateway = await inProcessGateway({ CATALOG_URL: 'http://127.0.0.1:9' });
    const document = (
      await gateway.app.inject({ url: '/openapi.json' })
    ).json<OpenAPIV3_1.Document>();
    await gateway.close();
    const routeDescription = document.paths![MCP_ROUTE.url]!.post!.description!;
    for (const tool of CATALOG_TOOLS) {
      for (const text of [INSTRUCTIONS, routeDescription]) expect(text).toContain(tool.name);
      const entry = listed.find((t) => t.name === tool.name)!;
      expect(entry.description).toBe(descriptionOf(tool));
      expect(entry.description).toContain(tool.description);
      const tiers = tiersOf(tool.route);
      if (tiers !== undefined) {
        expect(entry.description).toMatch(/ Needs an? [\w ]+ key\.$/);
        expect(INSTRUCTIONS).toMatch(new RegExp(`${tool.name} [^;]*\\(${tiers} keys\\)`));
        expect(routeDescription).toContain(`${tool.name} (${tiers})`);
      }
    }
  });

  test('the MCP table of docs/api.md has a row for each tool, in order, with the route it mirrors', () => {
    const guide = readFileSync(path.join(ROOT, 'docs/api.md'), 'utf8');
    const start = guide.indexOf('## MCP (for AI agents)');
    const section = guide.slice(start, guide.indexOf('\n## ', start + 1));
    const rows = [...section.matchAll(/^\| `(\w+)` +\|([^|]*)\| `GET ([^`]+)` +\|$/gm)];
    expect(rows.map(([, name, , url]) => [name, url])).toEqual(
      CATALOG_TOOLS.map((tool) => [tool.name, tool.route.url.replace(/:(\w+)/g, '{$1}')]),
    );
    for (const [, name, args] of rows) {
      const tiers = tiersOf(CATALOG_TOOLS.find((tool) => tool.name === name)!.route);
      if (tiers !== undefined) expect([name, args]).toEqual([name, expect.stringContaining(tiers)]);
    }
  });

  test("each tool's structured content validates against its output schema on every tier the route is open to", async () => {
    const validator = new AjvJsonSchemaValidator();
    expect(Object.keys(SAMPLE_CALLS).sort()).toEqual(CATALOG_TOOLS.map((t) => t.name).sort());
    for (const tool of CATALOG_TOOLS) {
      const advertised = listed.find((t) => t.name === tool.name)!.outputSchema!;
      expect(advertised).toMatchObject({ type: 'object', required: ['data', 'meta'] });
      const validate = validator.getValidator(advertised);
      for (const [tier, args] of TIERS.flatMap((t) =>
        SAMPLE_CALLS[tool.name]!.map((a) => [t, a] as const),
      )) {
        const what = `${tool.name} ${JSON.stringify(args)} for ${tier}`;
        const response = await catalog.inject({ url: tool.path(args), headers: asTier(tier) });
        if (!tierAtLeast(tier, tool.route.tier)) {
          expect([what, response.statusCode]).toEqual([what, 403]);
          continue;
        }
        expect([what, response.statusCode]).toEqual([what, 200]);
        const body = response.json<{ data: Json | Json[] }>();
        // The server's check (the SDK validates the content with the tool's schema) and a
        // client's (Ajv against the JSON Schema tools/list gives).
        expect([what, problem(tool.output, body)]).toEqual([what, undefined]);
        expect([what, validate(body).errorMessage]).toEqual([what, undefined]);
        // Not a schema that takes anything: a record without its slug (a history entry without
        // its type) is refused.
        const broken = structuredClone(body);
        const first = Array.isArray(broken.data) ? broken.data[0]! : broken.data;
        const item = 'tools' in first ? (first.tools as Json[])[0]! : first;
        delete item['slug' in item ? 'slug' : 'type'];
        expect([what, problem(tool.output, broken)]).toEqual([what, expect.any(String)]);
        expect([what, validate(broken).valid]).toEqual([what, false]);
      }
    }
  });
});
