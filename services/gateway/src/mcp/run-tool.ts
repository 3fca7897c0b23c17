import type { CallToolResult } from '@modelcontextprotocol/server';
import type { FastifyRequest } from 'fastify';
import { TIER_LABELS, tierAtLeast } from '../../../shared/tiers';
import type { Upstream } from '../proxy/read-catalog';
import { type CatalogTool, NEEDED } from './catalog-tool';
import { readMirroredRoute } from './mirrored-read';

export function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/**
 * Runs a tool as the REST call it mirrors, for the caller of `request`: its tier checked as the
 * route table says, then the route read through the gateway's cache and catalog call, so the
 * records are the ones REST gives this tier. The answer is the structured content with a short
 * text; an error answer of the catalog (an unknown slug, a parameter out of range) or its
 * failure is a tool error with the API's message.
 */
export async function runCatalogTool(
  upstream: Upstream,
  request: FastifyRequest,
  tool: CatalogTool,
  args: Record<string, unknown>,
): Promise<CallToolResult> {
  const { tier } = request.caller!;
  if (!tierAtLeast(tier, tool.route.tier)) {
    return toolError(
      `${tool.name} needs ${NEEDED[tool.route.tier]}; this is a ${TIER_LABELS[tier]} key`,
    );
  }
  const answer = await readMirroredRoute(upstream, request, tool.route, tool.path(args));
  if (answer.error !== undefined) return toolError(answer.error);
  return {
    content: [{ type: 'text', text: tool.text(answer.body, args) }],
    structuredContent: answer.body as unknown as Record<string, unknown>,
  };
}
