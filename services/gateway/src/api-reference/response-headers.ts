import type { OpenAPIV3_1 } from 'openapi-types';

type Header = OpenAPIV3_1.HeaderObject;
type HeaderRef = OpenAPIV3_1.ReferenceObject | Header;

/** Where an operation is answered: what its responses' headers follow from. */
export interface Answering {
  /** It needs an API key: the gateway checks and counts it first. */
  keyed: boolean;
  /** The catalog answers it, through the gateway's proxy (and its response cache). */
  proxied: boolean;
  /** Its 200 answers are shared by the keys of a tier and carry an ETag (a 304 on a match). */
  cacheable: boolean;
}

const RATE_LIMIT: Record<string, Header> = {
  'X-RateLimit-Limit': { description: "The key's daily quota", schema: { type: 'integer' } },
  'X-RateLimit-Remaining': {
    description: 'Units left after this request, never negative',
    schema: { type: 'integer', minimum: 0 },
  },
  'X-RateLimit-Reset': {
    description: 'Unix time in seconds of the next 00:00:00 UTC',
    schema: { type: 'integer' },
  },
  'RateLimit-Policy': {
    description: 'IETF draft field: `"daily";q=<quota>;w=86400`',
    schema: { type: 'string' },
    example: '"daily";q=100;w=86400',
  },
  RateLimit: {
    description: 'IETF draft field: `"daily";r=<remaining>;t=<seconds to reset>`',
    schema: { type: 'string' },
    example: '"daily";r=99;t=68865',
  },
};

/** Every response header of the API (`components.headers`), each required where it is named. */
export const HEADERS: Record<string, Header> = {
  'X-Request-Id': {
    description:
      "The request's id, in the logs too: the request's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-`, else a new UUID",
    required: true,
    schema: { type: 'string' },
  },
  ...Object.fromEntries(
    Object.entries(RATE_LIMIT).map(([name, header]) => [name, { ...header, required: true }]),
  ),
  'Retry-After': {
    description: 'Seconds until the limit that was hit resets',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
  'WWW-Authenticate': {
    description: 'How to authenticate: an API key in the `x-api-key` header',
    required: true,
    schema: { type: 'string' },
    example: 'ApiKey realm="Tool Directory", header="x-api-key"',
  },
  ETag: {
    description:
      'Strong entity tag of the answer, per tier and encoding: send it in `If-None-Match` to get a 304 while it is current',
    required: true,
    schema: { type: 'string' },
    example: '"kJ3n0cXq7bKp1yZt2mWq4vR8sHc"',
  },
  'X-Cache': {
    description:
      "`HIT` when the gateway answered from its response cache, `MISS` when it asked the catalog; absent when the gateway's cache is off, and on the gateway's own errors",
    schema: { type: 'string', enum: ['HIT', 'MISS'] },
  },
};

const ref = (name: string): OpenAPIV3_1.ReferenceObject => ({
  $ref: `#/components/headers/${name}`,
});

/**
 * A keyed request whose key was not counted: an unknown key from an address past its limit of
 * them (429), keys that cannot be checked (503), or a restricted key used from an address it does
 * not allow (403). Its rate-limit headers may be missing.
 */
const MAYBE_UNCOUNTED = new Set(['403', '429', '503']);
/** Answered by the gateway itself, never by the catalog (so never from its cache). */
const GATEWAY_ONLY = new Set(['401', '429', '502', '503', '504']);

/**
 * The headers of one response, by its status and where the operation is answered: the one
 * place the document's response headers come from. The request id is on every response; the
 * rate-limit headers on every answer to a keyed request but the 401 (required where the key is
 * always counted); the ETag on the 200 and 304 of a cacheable route; `X-Cache` on what the
 * catalog answered through the proxy.
 */
export function responseHeaders(status: string, answering: Answering): Record<string, HeaderRef> {
  const headers: Record<string, HeaderRef> = { 'X-Request-Id': ref('X-Request-Id') };
  if (answering.keyed && status !== '401') {
    for (const [name, header] of Object.entries(RATE_LIMIT)) {
      headers[name] = MAYBE_UNCOUNTED.has(status) ? header : ref(name);
    }
  }
  if (status === '401') headers['WWW-Authenticate'] = ref('WWW-Authenticate');
  if (status === '429') headers['Retry-After'] = ref('Retry-After');
  if (answering.cacheable && (status === '200' || status === '304')) headers.ETag = ref('ETag');
  if (answering.proxied && !GATEWAY_ONLY.has(status)) headers['X-Cache'] = ref('X-Cache');
  return headers;
}

/** Request headers any operation takes (`components.parameters`). */
export const PARAMETERS: Record<string, OpenAPIV3_1.ParameterObject> = {
  RequestId: {
    name: 'X-Request-Id',
    in: 'header',
    description:
      "Your id for the request, echoed in the answer's `X-Request-Id` and logged when it is 1 to 128 letters, digits or `._:-` (otherwise a new one is made)",
    schema: { type: 'string' },
  },
  IfNoneMatch: {
    name: 'If-None-Match',
    in: 'header',
    description:
      'ETags of answers you hold (or `*`): while one is current the answer is a 304 without a body',
    schema: { type: 'string' },
  },
};
