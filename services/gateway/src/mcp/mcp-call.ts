import type { AuthInfo, McpServer, ServerContext } from '@modelcontextprotocol/server';
import type { FastifyRequest } from 'fastify';
import { SCOPES } from '../../../shared/contract';
import type { MirroredRead } from './mirrored-read';

/** How a `tools/call` ended, for the metric: `invalid` when the SDK refused it before the tool. */
export type ToolOutcome = 'ok' | 'error' | 'invalid';

/**
 * One MCP request as the endpoint and the server's handlers see it: the HTTP request of its
 * caller (whose key, tier and trace the catalog reads are made for), how its tool ended, and what
 * the serving left behind. It travels to the handlers as the request's validated authentication
 * (`AuthInfo.extra`), the SDK's way of giving a handler its principal, so one server serves every
 * caller in turn.
 */
export interface McpCall {
  request: FastifyRequest;
  outcome: ToolOutcome;
  /** The server lent to the request, and of which era (McpEndpoint). */
  lent?: { server: McpServer; era: 'legacy' | 'modern' };
  /** The catalog read of its tool: made ahead by the endpoint, or by the tool itself. */
  read?: { path: string; result: MirroredRead };
}

/** The authentication the SDK passes to the handlers: the key (never its secret) and the call. */
export function authInfoOf(call: McpCall): AuthInfo {
  const caller = call.request.caller!;
  return {
    token: caller.keyId,
    clientId: caller.keyId,
    // A key without scopes may do all its tier allows.
    scopes: (caller.scopes ?? SCOPES) as string[],
    extra: { call },
  };
}

/** The call of a request, as a handler gets it from the SDK. */
export function callOf(ctx: Pick<ServerContext, 'http'>): McpCall {
  const call = ctx.http?.authInfo?.extra?.call as McpCall | undefined;
  // Every request reaches a handler through the endpoint, which always passes its call.
  if (call === undefined) throw new Error('an MCP request without its call');
  return call;
}
