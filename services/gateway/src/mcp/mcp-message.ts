import { type Static, Type } from '@sinclair/typebox';
import { TOOLS_BY_NAME } from './tools';

const JsonRpcId = Type.Union([Type.String(), Type.Number()]);

export const McpMessage = Type.Object(
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
export type McpMessage = Static<typeof McpMessage>;

export const McpResponse = Type.Object(
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
export type McpResponse = Static<typeof McpResponse>;

/**
 * The JSON-RPC error code of a `tools/call` past the quota: one of the server-error range that
 * JSON-RPC leaves to implementations, its last digits those of the HTTP status it comes with.
 */
export const QUOTA_EXCEEDED_CODE = -32029;

export const BATCH_REFUSED =
  'A JSON-RPC batch is not accepted: send one message per request (the current revision of MCP has no batches)';

/** JSON-RPC's code for invalid method parameters. */
const INVALID_PARAMS = -32602;

/** The methods that take a unit of the quota, as the REST reads they mirror. */
export const CHARGED = new Set(['tools/call', 'resources/read']);

/** What the SDK's transport answers to a method it does not serve, word for word. */
export const METHOD_NOT_ALLOWED: McpResponse = {
  jsonrpc: '2.0',
  error: { code: -32000, message: 'Method not allowed.' },
  id: null,
};

/**
 * A `tools/call` whose params have not the shape of one (no tool name, arguments not an object):
 * its JSON-RPC invalid params. The SDK checks the shape too, but answers its failure as an
 * internal error (-32603).
 */
export function malformedCall({ id, params }: McpMessage): McpResponse | undefined {
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
export function overQuota(id: McpMessage['id'], message: string, retryAfter: number): McpResponse {
  return {
    jsonrpc: '2.0',
    id: id ?? null,
    error: { code: QUOTA_EXCEEDED_CODE, message, data: { retryAfter } },
  };
}

/**
 * The tool a message calls, as metrics and spans name it: its name, `unknown` for a name outside
 * the tools, undefined when the message is no `tools/call` request (a notification calls nothing).
 */
export function calledTool(message: McpMessage): string | undefined {
  if (message.method !== 'tools/call' || message.id === undefined) return undefined;
  const name = message.params?.name;
  return TOOLS_BY_NAME.has(name as string) ? (name as string) : 'unknown';
}

/** The query of a call of the search tool, as the search analytics count it. */
export function searchedQuery(message: McpMessage): unknown {
  return (message.params?.arguments as { q?: unknown } | undefined)?.q;
}
