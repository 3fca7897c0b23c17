import {
  type CacheHint,
  McpServer,
  ResourceTemplate,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { Upstream } from '../proxy/read-catalog';
import { CATALOG_RESOURCES, readCatalogResource } from './catalog-resources';
import { descriptionOf } from './catalog-tool';
import { callOf } from './mcp-call';
import { runCatalogTool, toolError } from './run-tool';
import { CATALOG_TOOLS, INSTRUCTIONS } from './tools';

const SERVER_INFO = { name: 'tool-directory', title: 'Tool Directory', version: '1.0.0' };

const HOUR_MS = 3_600_000;

/**
 * What a client may keep of the lists and of discovery (2026-07-28): an hour, in any cache, since
 * they are the same for every key and change only with a release.
 */
const LISTS: CacheHint = { ttlMs: HOUR_MS, cacheScope: 'public' };

const ANNOTATIONS = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};

/**
 * The endpoint's MCP server: the catalog's tools and resources, each a read of the REST route it
 * mirrors for the caller of the request being served. Built with its tools' schemas and compiled
 * validators ahead of any request; `McpServerPool` keeps the built servers for reuse.
 */
export function buildMcpServer(upstream: Upstream): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions: INSTRUCTIONS,
    cacheHints: {
      'tools/list': LISTS,
      'resources/list': LISTS,
      'resources/templates/list': LISTS,
      'server/discover': LISTS,
    },
  });
  for (const tool of CATALOG_TOOLS) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: descriptionOf(tool),
        inputSchema: tool.input,
        // The SDK checks each answer against it before sending; the catalog writes its answers
        // with the schemas it is made from, so an answer that fails it is a bug, a tool error.
        outputSchema: tool.output,
        annotations: { title: tool.title, ...ANNOTATIONS },
      },
      async (args: Record<string, unknown>, ctx: ServerContext) => {
        const call = callOf(ctx);
        try {
          const result = await runCatalogTool(upstream, call, tool, args);
          call.outcome = result.isError === true ? 'error' : 'ok';
          return result;
        } catch (err) {
          call.request.log.error({ err, tool: tool.name }, 'MCP tool failed');
          call.outcome = 'error';
          return toolError('Internal server error');
        }
      },
    );
  }
  for (const resource of CATALOG_RESOURCES) {
    const metadata = {
      title: resource.title,
      description: resource.description,
      mimeType: 'application/json',
    };
    if (resource.uri.includes('{')) {
      server.registerResource(
        resource.name,
        new ResourceTemplate(resource.uri, { list: undefined }),
        metadata,
        (uri, variables, ctx) =>
          readCatalogResource(upstream, callOf(ctx).request, resource, uri.href, variables),
      );
    } else {
      server.registerResource(resource.name, resource.uri, metadata, (uri, ctx) =>
        readCatalogResource(upstream, callOf(ctx).request, resource, uri.href, {}),
      );
    }
  }
  // Nothing listed changes while a release runs (a new one restarts the process), so no client
  // need listen for list changes; the SDK offers them as soon as a tool is registered.
  server.server.registerCapabilities({
    tools: { listChanged: false },
    resources: { listChanged: false },
  });
  return server;
}
