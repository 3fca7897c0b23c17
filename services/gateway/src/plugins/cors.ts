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
