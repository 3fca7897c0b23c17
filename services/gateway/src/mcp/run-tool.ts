import type { CallToolResult } from '@modelcontextprotocol/server';
import { TIER_LABELS, tierAtLeast } from '../../../shared/tiers';
import type { Upstream } from '../proxy/read-catalog';
import { type CatalogAnswerBody, type CatalogTool, NEEDED } from './catalog-tool';
import type { McpCall } from './mcp-call';
import { errorOf, readMirroredRoute } from './mirrored-read';

export function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** Why the caller of `call` may not run `tool`; undefined when it may. */
export function refusal(call: McpCall, tool: CatalogTool): string | undefined {
  const { tier } = call.request.caller!;
  if (tierAtLeast(tier, tool.route.tier)) return undefined;
  return `${tool.name} needs ${NEEDED[tool.route.tier]}; this is a ${TIER_LABELS[tier]} key`;
}

/**
 * Runs a tool as the REST call it mirrors, for the caller of `call`: its tier checked as the
 * route table says, then the route read through the gateway's cache and catalog call (or the read
 * the endpoint made ahead for it), so the records are the ones REST gives this tier. The answer
 * is the structured content with a short text; an error answer of the catalog (an unknown slug, a
 * parameter out of range) or its failure is a tool error with the API's message.
 */
export async function runCatalogTool(
  upstream: Upstream,
  call: McpCall,
  tool: CatalogTool,
  args: Record<string, unknown>,
): Promise<CallToolResult> {
  const refused = refusal(call, tool);
  if (refused !== undefined) return toolError(refused);
  const path = tool.path(args);
  if (call.read?.path !== path) {
    call.read = { path, result: await readMirroredRoute(upstream, call.request, tool.route, path) };
  }
  const read = call.read.result;
  const error = errorOf(read);
  if (error !== undefined) return toolError(error);
  const body = JSON.parse(read.bytes.toString()) as CatalogAnswerBody;
  return {
    content: [{ type: 'text', text: tool.text(body, args) }],
    structuredContent: body as unknown as Record<string, unknown>,
  };
}
