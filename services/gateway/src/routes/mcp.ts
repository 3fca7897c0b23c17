import type { SearchRecorder } from '../analytics/search-recorder';
import type { JSONRPCNotification, JSONRPCRequest } from '@modelcontextprotocol/server';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { jsonBodyValidator } from '../../../shared/body-validator';
import { MCP_ROUTE } from '../../../shared/contract';
import { Errors } from '../../../shared/errors';
import { ErrorBody } from '../../../shared/openapi';
import { tagMcpRequest } from '../../../shared/span-attributes';
import type { ApiKeyGuard } from '../guard/api-key-guard';
import type { McpCall } from '../mcp/mcp-call';
import { type McpAnswer, McpEndpoint } from '../mcp/mcp-endpoint';
import { TOOLS_BY_NAME, TOOLS_IN_A_LINE } from '../mcp/tools';
import { searchTools } from '../mcp/tools/search-tools';
import type { GatewayMetrics } from '../observability/metrics';
import type { Upstream } from '../proxy/read-catalog';

const JsonRpcId = Type.Union([Type.String(), Type.Number()]);

const McpMessage = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    id: Type.Optional(JsonRpcId),
    method: Type.String({ minLength: 1, maxLength: 128 }),
    params: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  {
    $id: 'McpMessage',
    description:
      'One JSON-RPC 2.0 request (with an id) or notification of the Model Context Protocol; a batch (an array) is refused: the current revision of MCP has none',
  },
);
type McpMessage = Static<typeof McpMessage>;

const McpResponse = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    id: Type.Union([JsonRpcId, Type.Null()]),
    result: Type.Optional(Type.Object({}, { additionalProperties: true })),
    error: Type.Optional(
      Type.Object({
        code: Type.Integer(),
        message: Type.String(),
        data: Type.Optional(Type.Unknown()),
      }),
    ),
  },
  { $id: 'McpResponse', description: 'The JSON-RPC 2.0 response: a result or an error' },
);
type McpResponse = Static<typeof McpResponse>;

/**
 * The JSON-RPC error code of a `tools/call` past the quota: one of the server-error range that
 * JSON-RPC leaves to implementations, its last digits those of the HTTP status it comes with.
 */
const QUOTA_EXCEEDED_CODE = -32029;

const BATCH_REFUSED =
  'A JSON-RPC batch is not accepted: send one message per request (the current revision of MCP has no batches)';

/** JSON-RPC's code for invalid method parameters. */
const INVALID_PARAMS = -32602;

/** The methods that take a unit of the quota, as the REST reads they mirror. */
const CHARGED = new Set(['tools/call', 'resources/read']);

/** What the SDK's transport answers to a method it does not serve, word for word. */
const METHOD_NOT_ALLOWED: McpResponse = {
  jsonrpc: '2.0',
  error: { code: -32000, message: 'Method not allowed.' },
  id: null,
};

/**
 * A `tools/call` whose params have not the shape of one (no tool name, arguments not an object):
 * its JSON-RPC invalid params. The SDK checks the shape too, but answers its failure as an
 * internal error (-32603).
 */
function malformedCall({ id, params }: McpMessage): McpResponse | undefined {
  const args = params?.arguments;
  const argsOk =
    args === undefined || (typeof args === 'object' && args !== null && !Array.isArray(args));
  if (typeof params?.name === 'string' && argsOk) return undefined;
  return {
    jsonrpc: '2.0',
    id: id ?? null,
    error: {
      code: INVALID_PARAMS,
      message:
        'Invalid params: tools/call takes params.name, a tool name, and params.arguments, an object',
    },
  };
}

/** The 429 of a `tools/call` or `resources/read` past the quota: the guard's message, as a JSON-RPC error. */
function overQuota(reply: FastifyReply, id: McpMessage['id'], message: string): McpResponse {
  return {
    jsonrpc: '2.0',
    id: id ?? null,
    error: {
      code: QUOTA_EXCEEDED_CODE,
      message,
      data: { retryAfter: Number(reply.getHeader('retry-after')) },
    },
  };
}

/** The endpoint's answer: its status, its JSON (a notification's 202 has none). */
function relay(reply: FastifyReply, { status, type, body, written }: McpAnswer): FastifyReply {
  // Written, or never to be: the socket has let go of the bytes either way.
  if (written !== undefined) reply.raw.once('close', written);
  reply.code(status);
  if (type === null) return reply.send();
  // As bytes: Fastify would add a charset to the SDK's type for text, which the kept answers
  // (bytes) do not carry, so one exchange would get two types.
  return reply.type(type).send(typeof body === 'string' ? Buffer.from(body) : body);
}

export interface McpRoutesOptions {
  upstream: Upstream;
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
  { upstream, charge, standing, headersOnRefusal, metrics, searches },
) => {
  const endpoint = new McpEndpoint(upstream);
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
      const calling = message.method === 'tools/call' && message.id !== undefined;
      const name = calling ? message.params?.name : undefined;
      const tool = calling
        ? TOOLS_BY_NAME.has(name as string)
          ? (name as string)
          : 'unknown'
        : '';
      tagMcpRequest(request, message.method, calling ? tool : undefined);
      if (message.id !== undefined && CHARGED.has(message.method)) {
        try {
          await charge(request, reply);
        } catch (err) {
          if (!(err instanceof Errors.quotaExceeded)) throw err;
          if (calling) metrics.mcpToolCalls.labels(tool, 'over_quota').inc();
          return reply.code(429).send(overQuota(reply, message.id, err.message));
        }
      } else {
        await standing(request, reply);
      }
      if (calling) {
        const malformed = malformedCall(message);
        if (malformed !== undefined) {
          metrics.mcpToolCalls.labels(tool, 'invalid').inc();
          return malformed;
        }
      }
      const call: McpCall = { request, outcome: 'invalid' };
      const answer = await endpoint.answer(call, message as JSONRPCRequest | JSONRPCNotification);
      if (calling) metrics.mcpToolCalls.labels(tool, call.outcome).inc();
      // The search tool's calls count for the analytics as REST `/v1/search` does.
      if (tool === searchTools.name && searches !== undefined && call.read !== undefined) {
        const args = message.params?.arguments as { q?: unknown } | undefined;
        const { status, bytes } = call.read.result;
        searches.recordAnswer(request.caller!.keyId, args?.q, status, bytes);
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
