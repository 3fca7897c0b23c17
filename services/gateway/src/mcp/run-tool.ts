import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { TIER_LABELS, tierAtLeast } from '../../../shared/tiers';
import { type CatalogRead, type Upstream, readCatalog } from '../proxy/read-catalog';
import { type CatalogAnswerBody, type CatalogTool, NEEDED } from './catalog-tool';

/**
 * A tool's catalog call carries none of the MCP request's headers (its Accept, its body's type and
 * length): the caller's identity, request id and trace are set by the call itself, and no
 * Accept-Encoding gets the answer as plain JSON (shared in the cache with REST calls without one).
 */
const NO_CLIENT_HEADERS = {};

export function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** The status and the JSON text of what a read of the catalog came to. */
async function answerOf(read: CatalogRead): Promise<{ status: number; text: string }> {
  if (read.kept !== undefined) return { status: 200, text: read.kept.body.toString() };
  const { statusCode, body } = read.relayed;
  const bytes = body instanceof Readable ? Buffer.concat(await body.toArray()) : body;
  return { status: statusCode, text: bytes.toString() };
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
  let answer: { status: number; text: string };
  try {
    const read = await readCatalog(upstream, request, {
      method: 'GET',
      path: tool.path(args),
      route: tool.route.url,
      clientHeaders: NO_CLIENT_HEADERS,
      cacheable: tool.route.cacheable === true,
    });
    answer = await answerOf(read);
  } catch (err) {
    // callCatalog's failures are the API's 502/503/504, logged there; their message says it.
    if ((err as { code?: string }).code?.startsWith('TD_'))
      return toolError((err as Error).message);
    throw err;
  }
  const body = JSON.parse(answer.text) as CatalogAnswerBody & { error?: string };
  if (answer.status !== 200)
    return toolError(body.error ?? `The catalog answered ${answer.status}`);
  return {
    content: [{ type: 'text', text: tool.text(body, args) }],
    structuredContent: body as unknown as Record<string, unknown>,
  };
}
