import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { isUtf8 } from 'node:buffer';
import type { JSONRPCRequest } from '@modelcontextprotocol/server';
import { MCP_ROUTE } from '../../../shared/contract';
import { requestIdFrom } from '../../../shared/request-id';
import { tagCaller, tagMcpSpan } from '../../../shared/span-attributes';
import { handUnitOver } from '../guard/unit-taken-ahead';
import type { KeyRecord } from '../keys/key-store';
import { handBodyOver } from '../mcp/body-read-ahead';
import type { McpEndpoint, Prepared } from '../mcp/mcp-endpoint';
import { CHARGED, type McpMessage, calledTool, searchedQuery } from '../mcp/mcp-message';
import { withId } from '../mcp/prepared-answers';
import { searchTools } from '../mcp/tools/search-tools';
import type { GatewayMetrics } from '../observability/metrics';
import type { QuotaDecision } from '../quota/quota-limiter';
import {
  type AnswerOrPass,
  type BeforeFastifyOptions,
  cachedCallerOf,
  countAndLog,
  keyedHead,
  startPathSpan,
} from './before-fastify';

export interface McpPreparedPathOptions extends BeforeFastifyOptions {
  endpoint: McpEndpoint;
  /** The API's JSON parser (json-body-parser.ts), throwing on a body the route's parser refuses. */
  parseJson: (text: string) => unknown;
  /** The route's own check of a message (McpMessage, compiled as the route compiles it). */
  isMessage: (body: unknown) => boolean;
  /** The response cache's hit counter: a tool's result made of a cached answer is a hit. */
  hits: { inc(): void };
  metrics: Pick<GatewayMetrics, 'mcpToolCalls'>;
}

/** A message of a caller this path answers, with what it found before the quota's answer. */
interface Found {
  record: KeyRecord;
  message: McpMessage & { id: JSONRPCRequest['id'] };
  prepared: Prepared;
  /** The tool a `tools/call` calls; undefined for a list or discovery. */
  tool: string | undefined;
  started: number;
}

/**
 * The gateway's prepared MCP answers, given before Fastify sees the request: a `POST /v1/mcp`
 * whose message the endpoint has answered before for the same exchange (a discovery or list
 * answer, or a tool's result made of the response cache's current answer: McpEndpoint.prepared)
 * is answered from those bytes, with the head and body in one write. It keeps the route's rules,
 * asking the same functions: the key (the guard's cache, a current secret), the route's tier and
 * scope, the body parsed and checked as the route parses and checks it, one unit for a
 * `tools/call` and none for a list, the rate-limit headers, CORS, the request id, the access
 * line, the HTTP and tool-call metrics, the last use, the search analytics and, with tracing on,
 * the SERVER span the route's would have with its MCP attributes.
 *
 * Anything else goes to Fastify, with the body this path read (the route reads it again,
 * mcp/body-read-ahead.ts) and before any unit is taken: another URL or type, a body too big or
 * not yet known to be one message, an Origin the CORS list must judge, a key the cache does not
 * know, an address-bound key, a tier or scope refused, a notification, any message whose answer
 * is not prepared, draining. A unit past the quota (or a quota error) goes to Fastify with the
 * request, whose `charge` answers it as it answers its own (guard/unit-taken-ahead.ts).
 * test/gateway/routes/mcp-prepared-path.test.ts holds its answers to Fastify's.
 */
export function mcpPreparedPath(options: McpPreparedPathOptions): AnswerOrPass {
  const { guard, quota, cors, endpoint, hits, metrics, searches } = options;

  /** Fastify's turn, with the body read and the unit taken, if one was. */
  function toFastify(
    req: IncomingMessage,
    res: ServerResponse,
    fastify: RequestListener,
    body: Buffer,
    unit?: Promise<QuotaDecision>,
  ): void {
    handBodyOver(req, body);
    if (unit !== undefined) handUnitOver(req, unit);
    fastify(req, res);
  }

  /** The caller, when this path may take the request up, before its body is read. */
  function callerOf(req: IncomingMessage): KeyRecord | undefined {
    const { headers } = req;
    if (
      req.method !== 'POST' ||
      req.url !== MCP_ROUTE.url ||
      headers['content-type'] !== 'application/json' ||
      headers['transfer-encoding'] !== undefined ||
      (headers.origin !== undefined && !cors.anyOrigin) ||
      options.draining()
    ) {
      return undefined;
    }
    const length = Number(headers['content-length']);
    if (!(length > 0 && length <= MCP_ROUTE.bodyLimit!)) return undefined;
    return cachedCallerOf(options, req, MCP_ROUTE);
  }

  /** What this path answers for the body of a request, without awaiting anything. */
  function foundIn(
    req: IncomingMessage,
    body: Buffer,
    record: KeyRecord,
    started: number,
  ): Found | undefined {
    if (!isUtf8(body)) return undefined;
    const message = options.parseJson(body.toString('utf8')) as McpMessage;
    if (!options.isMessage(message) || message.id === undefined) {
      return undefined;
    }
    const request = message as Found['message'];
    const prepared = endpoint.prepared(req.headers, request as JSONRPCRequest, record.tier);
    if (prepared === undefined) return undefined;
    const tool = calledTool(message);
    return { record, message: request, prepared, tool, started };
  }

  /** The quota asked (a unit for a call, a read for a list), then the answer, or Fastify's turn. */
  async function answer(
    req: IncomingMessage,
    res: ServerResponse,
    fastify: RequestListener,
    body: Buffer,
    found: Found,
  ): Promise<void> {
    const { record, message, prepared, tool } = found;
    const requestId = requestIdFrom(req);
    const span = startPathSpan(options, req, MCP_ROUTE.url, requestId);
    const charged = CHARGED.has(message.method);
    const quotaStarted = performance.now();
    const unit = charged
      ? quota.consume(record.id, record.tier)
      : quota.peek(record.id, record.tier);
    const taken = charged ? unit : undefined;
    let decision: QuotaDecision;
    try {
      decision = await unit;
    } catch {
      return toFastify(req, res, fastify, body, taken);
    }
    if (!decision.allowed) return toFastify(req, res, fastify, body, taken);
    if (span !== undefined) {
      tagMcpSpan(span, message.method, tool);
      tagCaller(span, record.tier, performance.now() - quotaStarted);
    }
    const { bytes, written } = withId(prepared.answer, message.id);
    try {
      const head = keyedHead(options, requestId, record.tier, decision, undefined);
      head.push('content-type', prepared.answer.type, 'content-length', String(bytes.length));
      // One write: end() corks the socket around the head and the body.
      res.writeHead(200, head).end(bytes);
    } catch (err) {
      // Nothing written yet: Fastify answers, through its error handler if it fails alike.
      if (!res.headersSent) return toFastify(req, res, fastify, body, taken);
      options.log?.error({ err }, 'prepared MCP answer failed after answering');
    }
    // Written, or never to be: the socket has let go of the bytes either way.
    if (written !== undefined) res.once('close', written);
    if (charged) guard.admitted(record, decision);
    const { read } = prepared;
    if (read !== undefined) hits.inc();
    if (tool !== undefined) metrics.mcpToolCalls.labels(tool, 'ok').inc();
    // The search tool's calls count for the analytics as REST `/v1/search` does.
    if (tool === searchTools.name && searches !== undefined && read !== undefined) {
      searches.recordAnswer(record.id, searchedQuery(message), 200, read.body);
    }
    const answered = { method: 'POST', route: MCP_ROUTE.url, status: 200, tier: record.tier };
    countAndLog(options, { ...answered, requestId, started: found.started }, span);
  }

  /** The body read, then answered here or handed to Fastify with it. */
  function readThenAnswer(
    req: IncomingMessage,
    res: ServerResponse,
    fastify: RequestListener,
    record: KeyRecord,
  ): void {
    const started = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    // A request whose client went away before its body ended has no one to answer.
    req.once('end', () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      let found: Found | undefined;
      try {
        found = foundIn(req, body, record, started);
      } catch {
        // Nothing taken or written yet: whatever this path cannot read, Fastify decides.
        found = undefined;
      }
      if (found === undefined) toFastify(req, res, fastify, body);
      else void answer(req, res, fastify, body, found);
    });
  }

  return function answerOrPass(req, res, fastify): void {
    let record: KeyRecord | undefined;
    try {
      record = callerOf(req);
    } catch {
      record = undefined;
    }
    if (record === undefined) fastify(req, res);
    else readThenAnswer(req, res, fastify, record);
  };
}
