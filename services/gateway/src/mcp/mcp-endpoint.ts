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
import type { CatalogTool } from './catalog-tool';
import { type McpCall, authInfoOf } from './mcp-call';
import { buildMcpServer } from './mcp-server';
import { type MirroredRead, readMirroredRoute } from './mirrored-read';
import {
  type PreparedAnswer,
  PreparedAnswers,
  SDK_HEADERS,
  exchangeKey,
  withId,
} from './prepared-answers';
import { refusal } from './run-tool';
import { TOOLS_BY_NAME } from './tools';

type Era = 'legacy' | 'modern';

/**
 * The 2026-07-28 request for a stream of the server's notifications. This server has none to
 * send (nothing it lists changes while it runs, and its capabilities say so), and a stream held
 * open for nothing would hold a connection of the gateway and a subscription of the SDK.
 */
const LISTEN = 'subscriptions/listen';

/**
 * The methods whose answer is the same for every key while the process runs (its tools and
 * resources are built with it): kept once the SDK has written it.
 */
const SAME_FOR_EVERY_KEY = new Set([
  'initialize',
  'server/discover',
  'tools/list',
  'resources/list',
  'resources/templates/list',
]);

const JSON_TYPE = 'application/json';

type Message = JSONRPCRequest | JSONRPCNotification;

/** An answer of the endpoint: its status, and its JSON text (a notification's 202 has none). */
export interface McpAnswer {
  status: number;
  type: string | null;
  body: Buffer | string | null;
  /** To call once the answer is written: its buffer is then free again (a prepared answer). */
  written?: () => void;
}

function noNotifications(message: Message): McpAnswer {
  const body = {
    jsonrpc: '2.0',
    id: 'id' in message ? message.id : null,
    error: {
      code: METHOD_NOT_FOUND,
      message: `${LISTEN} is not served: this server sends no notifications (what it lists does not change while it runs)`,
    },
  };
  return { status: 200, type: JSON_TYPE, body: JSON.stringify(body) };
}

function preparedAnswer(answer: PreparedAnswer, id: JSONRPCRequest['id']): McpAnswer {
  const { bytes, written } = withId(answer, id);
  return { status: 200, type: answer.type, body: bytes, written };
}

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
  private readonly prepared = new PreparedAnswers();
  private readonly modern: McpHttpHandler;

  constructor(private readonly upstream: Upstream) {
    this.modern = createMcpHandler(({ authInfo }) => this.lend(callOf(authInfo?.extra), 'modern'), {
      legacy: 'reject',
    });
  }

  /**
   * Answers one message of the caller of `call`: as the SDK writes it, or as it wrote it for the
   * same exchange before (PreparedAnswers).
   */
  async answer(call: McpCall, message: Message): Promise<McpAnswer> {
    if (message.method === LISTEN) return noNotifications(message);
    if (!('id' in message)) return this.fromSdk(call, message);
    const { id } = message;
    const key = exchangeKey(call.request, message);
    if (SAME_FOR_EVERY_KEY.has(message.method)) {
      const kept = this.prepared.list(key);
      if (kept !== undefined) return preparedAnswer(kept, id);
      const answer = await this.fromSdk(call, message);
      if (answer.status === 200 && typeof answer.body === 'string') {
        this.prepared.keepList(key, answer.type!, answer.body, id);
      }
      return answer;
    }
    if (message.method !== 'tools/call') return this.fromSdk(call, message);
    const tool = TOOLS_BY_NAME.get(message.params!.name as string);
    const read = tool && (await this.readAhead(call, tool, message.params!.arguments));
    const kept = read?.kept && this.prepared.result(read.kept, key);
    if (kept) {
      call.outcome = 'ok';
      return preparedAnswer(kept, id);
    }
    const answer = await this.fromSdk(call, message);
    const made = call.read?.result.kept;
    if (made !== undefined && call.outcome === 'ok' && typeof answer.body === 'string') {
      this.prepared.keepResult(made, key, answer.type!, answer.body, id);
    }
    return answer;
  }

  /**
   * The catalog read a tool's call comes to, made before the SDK sees the call, so that a result
   * the SDK wrote for the same read can be given again; the tool then uses this read. None when
   * the tool will not read (its tier refused, its arguments invalid): the SDK answers that.
   */
  private async readAhead(
    call: McpCall,
    tool: CatalogTool,
    args: unknown,
  ): Promise<MirroredRead | undefined> {
    if (refusal(call, tool) !== undefined) return undefined;
    const checked = tool.input['~standard'].validate(args ?? {}) as { issues?: unknown };
    if (checked.issues !== undefined) return undefined;
    const path = tool.path((args ?? {}) as Record<string, unknown>);
    const result = await readMirroredRoute(this.upstream, call.request, tool.route, path);
    call.read = { path, result };
    return result;
  }

  /** The SDK's answer to a message of the caller of `call`. */
  private async fromSdk(call: McpCall, message: Message): Promise<McpAnswer> {
    const request = webRequest(call.request);
    const authInfo = authInfoOf(call);
    let response: Response;
    try {
      if (await isLegacyRequest(request, message)) {
        const server = this.lend(call, 'legacy');
        const transport = new WebStandardStreamableHTTPServerTransport({
          sessionIdGenerator: undefined,
          enableJsonResponse: true,
        });
        await server.connect(transport);
        try {
          response = await transport.handleRequest(request, { parsedBody: message, authInfo });
        } finally {
          await server.close();
        }
      } else {
        response = await this.modern.fetch(request, { parsedBody: message, authInfo });
      }
    } finally {
      this.giveBack(call, message);
    }
    const type = response.headers.get('content-type');
    return { status: response.status, type, body: type === null ? null : await response.text() };
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
  private giveBack(call: McpCall, message: Message): void {
    const lent = call.lent;
    if (lent === undefined || !('id' in message)) return;
    if (lent.server.server.transport === undefined) this.idle[lent.era].push(lent.server);
  }
}

function callOf(extra: Record<string, unknown> | undefined): McpCall {
  return extra!.call as McpCall;
}
