import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { FastifyRequest } from 'fastify';
import type { Upstream } from '../proxy/read-catalog';
import { descriptionOf } from './catalog-tool';
import { runCatalogTool, toolError } from './run-tool';
import { CATALOG_TOOLS, INSTRUCTIONS } from './tools';

/** How a `tools/call` ended, for the metric: `invalid` when the SDK refused it before the tool. */
export type ToolOutcome = 'ok' | 'error' | 'invalid';

const SERVER_INFO = { name: 'tool-directory', title: 'Tool Directory', version: '1.0.0' };

/**
 * Used by the SDK only to check answers to requests the server sends (elicitation), which this
 * one never sends; one for every server, since a server made without it compiles its own Ajv.
 */
const SCHEMA_VALIDATOR = new AjvJsonSchemaValidator();

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, openWorldHint: false };

/**
 * The MCP server of one HTTP request (the transport is stateless: a server and a transport per
 * request, as the SDK requires). Each tool runs for the caller of `request`; `outcome` learns how
 * the tool the request called ended.
 */
export function mcpServerFor(
  upstream: Upstream,
  request: FastifyRequest,
  outcome: (result: ToolOutcome) => void,
): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: SCHEMA_VALIDATOR,
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
        annotations: { title: tool.title, ...READ_ONLY },
      },
      async (args: Record<string, unknown>) => {
        try {
          const result = await runCatalogTool(upstream, request, tool, args);
          outcome(result.isError ? 'error' : 'ok');
          return result;
        } catch (err) {
          request.log.error({ err, tool: tool.name }, 'MCP tool failed');
          outcome('error');
          return toolError('Internal server error');
        }
      },
    );
  }
  return server;
}
