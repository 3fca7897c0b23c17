import type { SearchRecorder } from '../analytics/search-recorder';
import type { JSONRPCNotification, JSONRPCRequest } from '@modelcontextprotocol/server';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { jsonBodyValidator } from '../../../shared/body-validator';
import { MCP_ROUTE } from '../../../shared/contract';
import { Errors } from '../../../shared/errors';
import { ErrorBody } from '../../../shared/openapi';
import { tagMcpRequest } from '../../../shared/span-attributes';
import type { ApiKeyGuard } from '../guard/api-key-guard';
import { bodyReadAhead } from '../mcp/body-read-ahead';
import type { McpCall } from '../mcp/mcp-call';
import type { McpAnswer, McpEndpoint } from '../mcp/mcp-endpoint';
import {
  BATCH_REFUSED,
  CHARGED,
  METHOD_NOT_ALLOWED,
  McpMessage,
  McpResponse,
  calledTool,
  malformedCall,
  overQuota,
  searchedQuery,
} from '../mcp/mcp-message';
import { TOOLS_IN_A_LINE } from '../mcp/tools';
import { searchTools } from '../mcp/tools/search-tools';
import type { GatewayMetrics } from '../observability/metrics';

/** The endpoint's answer: its status, its JSON (a notification's 202 has none). */
function relay(reply: FastifyReply, { status, type, body, written }: McpAnswer): FastifyReply {
  // Written, or never to be: the socket has let go of the bytes either way.
  if (written !== undefined) reply.raw.once('close', written);
  reply.code(status);
  if (type === null) return reply.send();
  // As bytes: Fastify would add a charset to the SDK's type for text, which the prepared answers
  // (bytes) do not carry, so the same exchange would get two types.
  return reply.type(type).send(typeof body === 'string' ? Buffer.from(body) : body);
}

export interface McpRoutesOptions {
  /** The MCP server of both eras, shared with the prepared-answer path (mcp-prepared-path.ts). */
  endpoint: McpEndpoint;
  /** The guard's unit for one operation: taken for each `tools/call` and `resources/read`. */
  charge: ApiKeyGuard['charge'];
  /** The guard's rate-limit headers without a unit: for every other message. */
  standing: ApiKeyGuard['standing'];
  headersOnRefusal: ApiKeyGuard['headersOnRefusal'];
  metrics: GatewayMetrics;
  /** Counts the search tool's calls for the search analytics; undefined when they are off. */
  searches?: SearchRecorder | undefined;
}

/**
 * `POST /v1/mcp`: a Model Context Protocol server of both protocol eras (2025-11-25 and the
 * stateless 2026-07-28) over the Streamable HTTP transport of the official SDK, answering JSON.
 * Guarded like every route (deny-by-default, the key checked, the rate-limit headers set) but
 * free of quota as a request: discovery, `initialize` and the lists take no unit, each
 * `tools/call` and `resources/read` takes one (the guard's `charge`, before the read, whatever
 * its outcome, as a REST call's unit), and past the quota it is a JSON-RPC error with the 429 and
 * headers of REST. A body that is not one JSON-RPC message is the API's 400 or
 * 413 like any other; what the message asks is the SDK's to answer. `GET` (an SSE stream) and
 * `DELETE` (the end of a stateful connection) have nothing to serve without sessions: 405, as the
 * SDK's own stateless servers answer.
 */
export const mcpRoutes: FastifyPluginAsyncTypebox<McpRoutesOptions> = async (
  app,
  { endpoint, charge, standing, headersOnRefusal, metrics, searches },
) => {
  app.addHook('onClose', () => endpoint.close());
  app.post(
    MCP_ROUTE.url,
    {
      bodyLimit: MCP_ROUTE.bodyLimit,
      // Agent hosts sign in with OAuth: their access token stands for the person's key.
      config: { catalogRoute: MCP_ROUTE, bearer: true },
      validatorCompiler: jsonBodyValidator,
      // A body refused before the handler (not JSON, too big, of another type).
      onError: headersOnRefusal,
      // The body the prepared-answer path read before handing the request over, read again.
      preParsing: async (request, _reply, payload) => bodyReadAhead(request.raw) ?? payload,
      // Said in words: the schema's own 400 would say only that the body must be an object.
      preValidation: async (request) => {
        if (Array.isArray(request.body)) throw new Errors.badParameter(BATCH_REFUSED);
      },
      schema: {
        summary: 'Model Context Protocol server',
        operationId: 'sendMcpMessage',
        description: `MCP over Streamable HTTP, protocol revisions 2025-11-25 (\`initialize\`, then requests) and 2026-07-28 (stateless, \`server/discover\`), JSON answers: send \`Accept: application/json, text/event-stream\`. Tools: ${TOOLS_IN_A_LINE}. Resources: \`tooldirectory://categories\` and the template \`tooldirectory://tools/{slug}\`. Discovery, \`initialize\` and the lists take no unit of the quota; each \`tools/call\` and \`resources/read\` takes one. Past the quota such a request is a 429 whose body is a JSON-RPC error.`,
        tags: ['mcp'],
        body: McpMessage,
        response: {
          200: McpResponse,
          202: Type.Null({ description: 'A notification, accepted: no body' }),
          400: Type.Union([ErrorBody, McpResponse]),
          401: ErrorBody,
          406: McpResponse,
          413: ErrorBody,
          415: ErrorBody,
          429: Type.Union([McpResponse, ErrorBody]),
        },
      },
    },
    async (request, reply) => {
      const message = request.body;
      const tool = calledTool(message);
      tagMcpRequest(request, message.method, tool);
      if (message.id !== undefined && CHARGED.has(message.method)) {
        try {
          await charge(request, reply);
        } catch (err) {
          if (!(err instanceof Errors.quotaExceeded)) throw err;
          if (tool !== undefined) metrics.mcpToolCalls.labels(tool, 'over_quota').inc();
          const retryAfter = Number(reply.getHeader('retry-after'));
          return reply.code(429).send(overQuota(message.id, err.message, retryAfter));
        }
      } else {
        await standing(request, reply);
      }
      if (tool !== undefined) {
        const malformed = malformedCall(message);
        if (malformed !== undefined) {
          metrics.mcpToolCalls.labels(tool, 'invalid').inc();
          return malformed;
        }
      }
      const call: McpCall = { request, outcome: 'invalid' };
      const answer = await endpoint.answer(call, message as JSONRPCRequest | JSONRPCNotification);
      if (tool !== undefined) metrics.mcpToolCalls.labels(tool, call.outcome).inc();
      // The search tool's calls count for the analytics as REST `/v1/search` does.
      if (tool === searchTools.name && searches !== undefined && call.read !== undefined) {
        const { status, bytes } = call.read.result;
        searches.recordAnswer(request.caller!.keyId, searchedQuery(message), status, bytes);
      }
      return relay(reply, answer);
    },
  );

  app.route({
    method: ['GET', 'DELETE'],
    url: MCP_ROUTE.url,
    // A client probing with GET learns of OAuth from its 401 as from a POST's.
    config: { quotaCost: 0, scope: 'none', bearer: true },
    schema: { hide: true },
    handler: async (_request, reply) =>
      reply.code(405).header('allow', 'POST').send(METHOD_NOT_ALLOWED),
  });
};
