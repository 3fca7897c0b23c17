import type { FastifyCorsOptions } from '@fastify/cors';
import { REQUEST_ID_HEADER } from '../../../shared/request-id';
import { RATE_LIMIT_HEADERS } from '../quota/rate-limit-headers';

/**
 * CORS for browsers calling the API from CORS_ORIGINS (`*`, or a comma-separated list): the
 * headers a client sends and the ones its script may read, the rate-limit headers among them.
 */
export function corsOptions(origins: string): FastifyCorsOptions {
  return {
    origin: origins === '*' ? '*' : origins.split(',').map((o) => o.trim()),
    methods: ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'],
    allowedHeaders: [
      'x-api-key',
      'content-type',
      'if-none-match',
      'mcp-protocol-version',
      REQUEST_ID_HEADER,
      'traceparent',
      'tracestate',
    ],
    exposedHeaders: [
      ...RATE_LIMIT_HEADERS,
      'X-Request-Id',
      'ETag',
      'X-Cache',
      'WWW-Authenticate',
      'Content-Disposition',
    ],
    maxAge: 86_400,
    // A bare OPTIONS (no Origin or requested method) gets the same 204, not a text/plain 400.
    strictPreflight: false,
  };
}

/**
 * What CORS adds to an answer to a request without an Origin header, restated for the
 * cached-answer path, which writes its own head (its test holds it to @fastify/cors's answers):
 * `*` allows any origin and the exposed headers; a list makes every answer vary by Origin, and a
 * request with an Origin is left to @fastify/cors (`anyOrigin` false).
 */
export interface CorsWithoutOrigin {
  /** Name, value, name, value. */
  headers: string[];
  /** The Vary of a keyed answer before the catalog's own: CORS's, then the key's. */
  vary: string;
  /** Whether an Origin header leaves the answer as it is. */
  anyOrigin: boolean;
}

export function corsWithoutOrigin(origins: string): CorsWithoutOrigin {
  const { origin, exposedHeaders } = corsOptions(origins);
  const exposed = ['access-control-expose-headers', (exposedHeaders as string[]).join(', ')];
  return origin === '*'
    ? {
        headers: ['access-control-allow-origin', '*', ...exposed],
        vary: 'x-api-key',
        anyOrigin: true,
      }
    : {
        // A list naming `*` still allows any origin, and still varies by Origin.
        headers: (origin as string[]).includes('*')
          ? ['access-control-allow-origin', '*', ...exposed]
          : exposed,
        vary: 'Origin, x-api-key',
        anyOrigin: false,
      };
}
