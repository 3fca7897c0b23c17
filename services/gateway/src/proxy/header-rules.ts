import type { IncomingHttpHeaders } from 'node:http';
import { CATALOG_VERSION_HEADER } from '../../../shared/contract';
import { REQUEST_ID_HEADER } from '../../../shared/request-id';
import { INTERNAL_HEADERS } from '../../../shared/contract';

/**
 * Client headers never sent to the catalog: the key; hop-by-hop headers, this connection's
 * business (RFC 9110 7.6.1), which undici refuses outright in part; framing and Host, which undici
 * sets for its own connection; and the names the gateway sets itself below.
 */
const NOT_FORWARDED = new Set([
  'x-api-key',
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'expect',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  INTERNAL_HEADERS.token,
  INTERNAL_HEADERS.tier,
  INTERNAL_HEADERS.keyId,
  REQUEST_ID_HEADER,
]);
/** The tracer injects its own traceparent (one, never two); without tracing they pass through. */
const TRACE_HEADERS = new Set(['traceparent', 'tracestate']);

export interface Caller {
  tier: string;
  keyId: string;
  requestId: string;
}

/**
 * Builds the headers of catalog calls: the client's, less the ones above, plus the caller's
 * identity in headers only the gateway sets, next to the internal token
 * (docs/api.md#health-request-ids-and-tracing).
 */
export function upstreamHeaders(internalToken: string, replaceTraceHeaders: boolean) {
  return (
    client: IncomingHttpHeaders,
    caller: Caller,
    omit?: string,
  ): Record<string, string | string[]> => {
    const headers: Record<string, string | string[]> = {};
    for (const name in client) {
      const value = client[name];
      if (value === undefined || NOT_FORWARDED.has(name) || name === omit) continue;
      if (replaceTraceHeaders && TRACE_HEADERS.has(name)) continue;
      headers[name] = value;
    }
    headers[INTERNAL_HEADERS.token] = internalToken;
    headers[INTERNAL_HEADERS.tier] = caller.tier;
    headers[INTERNAL_HEADERS.keyId] = caller.keyId;
    headers[REQUEST_ID_HEADER] = caller.requestId;
    return headers;
  };
}

/**
 * Catalog answer headers never passed on: hop-by-hop ones describe the gateway's pool, not the
 * client's connection; framing and Date are the gateway's own; the request id is already set;
 * the catalog version is internal. Vary is joined to the gateway's, not copied over it.
 */
const NOT_RELAYED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'trailer',
  'upgrade',
  'transfer-encoding',
  'date',
  'vary',
  REQUEST_ID_HEADER,
  CATALOG_VERSION_HEADER,
]);

/** The catalog's answer headers a client gets, as [name, value] pairs. */
export function relayedHeaders(
  headers: IncomingHttpHeaders,
  keepLength: boolean,
): [string, string | string[]][] {
  const relayed: [string, string | string[]][] = [];
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || NOT_RELAYED.has(name)) continue;
    if (!keepLength && name === 'content-length') continue;
    relayed.push([name, value]);
  }
  return relayed;
}
