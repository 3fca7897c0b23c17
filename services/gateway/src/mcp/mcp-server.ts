import {
  type AuthInfo,
  type CacheHint,
  McpServer,
  ResourceTemplate,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { FastifyRequest } from 'fastify';
import { SCOPES } from '../../../shared/contract';
import type { Upstream } from '../proxy/read-catalog';
import { CATALOG_RESOURCES, readCatalogResource } from './catalog-resources';
import { descriptionOf } from './catalog-tool';
import { runCatalogTool, toolError } from './run-tool';
import { CATALOG_TOOLS, INSTRUCTIONS } from './tools';

/** How a `tools/call` ended, for the metric: `invalid` when the SDK refused it before the tool. */
export type ToolOutcome = 'ok' | 'error' | 'invalid';

/**
 * One MCP request as the server's handlers see it: the HTTP request of its caller (whose key, tier
 * and trace the catalog reads are made for) and how its tool ended. It travels to the handlers as
 * the request's validated authentication (`AuthInfo.extra`), the SDK's way of giving a handler
 * its principal, so one server serves every caller in turn.
 */
export interface McpCall {
  request: FastifyRequest;
  outcome: ToolOutcome;
  /** The server lent to the request, and of which era (McpEndpoint). */
  lent?: { server: McpServer; era: 'legacy' | 'modern' };
}

/** The authentication the SDK passes to the handlers: the key (never its secret) and the call. */
export function authInfoOf(call: McpCall): AuthInfo {
  const caller = call.request.caller!;
  return {
    token: caller.keyId,
    clientId: caller.keyId,
    // A key without scopes may do all its tier allows.
    scopes: (caller.scopes ?? SCOPES) as string[],
    extra: { call },
  };
}

function callOf(ctx: ServerContext): McpCall {
  const call = ctx.http?.authInfo?.extra?.call as McpCall | undefined;
  // Every request reaches a handler through the route, which always passes its call.
  if (call === undefined) throw new Error('an MCP request without its call');
  return call;
}

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
          const result = await runCatalogTool(upstream, call.request, tool, args);
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
