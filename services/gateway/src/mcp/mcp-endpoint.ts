import {
  METHOD_NOT_FOUND,
  type JSONRPCNotification,
  type JSONRPCRequest,
  type McpHttpHandler,
  type McpServer,
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
  isLegacyRequest,
} from '@modelcontextprotocol/server';
import type { FastifyRequest } from 'fastify';
import { MCP_ROUTE } from '../../../shared/contract';
import type { Upstream } from '../proxy/read-catalog';
import { type McpCall, authInfoOf, buildMcpServer } from './mcp-server';

type Era = 'legacy' | 'modern';

/**
 * The 2026-07-28 request for a stream of the server's notifications. This server has none to
 * send (nothing it lists changes while it runs, and its capabilities say so), and a stream held
 * open for nothing would hold a connection of the gateway and a subscription of the SDK.
 */
const LISTEN = 'subscriptions/listen';

function noNotifications(message: JSONRPCRequest | JSONRPCNotification): Response {
  return Response.json({
    jsonrpc: '2.0',
    id: 'id' in message ? message.id : null,
    error: {
      code: METHOD_NOT_FOUND,
      message: `${LISTEN} is not served: this server sends no notifications (what it lists does not change while it runs)`,
    },
  });
}

/**
 * The request headers the SDK reads: what the client accepts, what it sent, which revision, and
 * the routing headers of 2026-07-28 (checked against the body).
 */
const SDK_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-method', 'mcp-name'];

/** The request as the SDK takes it: a web Request of its headers, its body already parsed. */
function webRequest(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const name of SDK_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers.set(name, value);
  }
  return new Request(`http://gateway${MCP_ROUTE.url}`, { method: 'POST', headers });
}

/**
 * The MCP endpoint of both protocol eras on one URL, with the official SDK: a 2026-07-28 message
 * (one carrying its revision in `_meta`, or `server/discover`) goes to the SDK's handler of that
 * revision (`createMcpHandler`), a 2025 one (`initialize`, then requests) to its stateless
 * Streamable HTTP transport answering JSON, as `isLegacyRequest`, the SDK's own classification,
 * decides (docs/api.md#mcp-for-ai-agents).
 *
 * The SDK serves each request with a server instance of its own. Building one (the tools, their
 * schemas, the resources) costs more than most requests, so built servers are kept, one list per
 * era, and lent one request at a time: a server goes back once its exchange has closed it, and
 * one the SDK still holds is left to the garbage collector. Who calls, and how its tool ends,
 * travels with each request (`McpCall`), never with a server.
 */
export class McpEndpoint {
  private readonly idle: Record<Era, McpServer[]> = { legacy: [], modern: [] };
  private readonly modern: McpHttpHandler;

  constructor(private readonly upstream: Upstream) {
    this.modern = createMcpHandler(({ authInfo }) => this.lend(callOf(authInfo?.extra), 'modern'), {
      legacy: 'reject',
    });
  }

  /** Answers one message of the caller of `call`, as the SDK writes it. */
  async answer(call: McpCall, message: JSONRPCRequest | JSONRPCNotification): Promise<Response> {
    if (message.method === LISTEN) return noNotifications(message);
    const request = webRequest(call.request);
    const authInfo = authInfoOf(call);
    try {
      if (await isLegacyRequest(request, message)) {
        const server = this.lend(call, 'legacy');
        const transport = new WebStandardStreamableHTTPServerTransport({
          sessionIdGenerator: undefined,
          enableJsonResponse: true,
        });
        await server.connect(transport);
        try {
          return await transport.handleRequest(request, { parsedBody: message, authInfo });
        } finally {
          await server.close();
        }
      }
      return await this.modern.fetch(request, { parsedBody: message, authInfo });
    } finally {
      this.giveBack(call, message);
    }
  }

  close(): Promise<void> {
    return this.modern.close();
  }

  private lend(call: McpCall, era: Era): McpServer {
    const server = this.idle[era].pop() ?? buildMcpServer(this.upstream);
    call.lent = { server, era };
    return server;
  }

  /**
   * The server of a request's exchange back to its list, if the exchange has closed it. The SDK
   * closes a notification's server after answering it, so one is never kept.
   */
  private giveBack(call: McpCall, message: JSONRPCRequest | JSONRPCNotification): void {
    const lent = call.lent;
    if (lent === undefined || !('id' in message)) return;
    if (lent.server.server.transport === undefined) this.idle[lent.era].push(lent.server);
  }
}

function callOf(extra: Record<string, unknown> | undefined): McpCall {
  return extra!.call as McpCall;
}
