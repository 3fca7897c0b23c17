import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { Errors } from '../../../shared/errors';
import { AnswerReader, type CatalogAnswer, discard } from './catalog-answer';

export type FailureKind = 'timeout' | 'unavailable' | 'bad_gateway';

/**
 * A failed catalog call, as the client's answer (docs/api.md#parameters-and-validation) and the
 * metric's kind.
 */
export class UpstreamFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    readonly answer: Error,
    override readonly cause: unknown,
  ) {
    super(`catalog call failed (${kind})`);
  }
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

/** What a failed call (or the body of its answer) means for the client. */
export function upstreamFailure(err: unknown): UpstreamFailure {
  const error = err as { code?: string; cause?: { code?: string } };
  const codes = [error.code, error.cause?.code];
  if (codes.some((c) => c !== undefined && TIMEOUT_CODES.has(c)))
    return new UpstreamFailure('timeout', new Errors.upstreamTimeout(), err);
  if (codes.some((c) => c !== undefined && UNAVAILABLE_CODES.has(c)))
    return new UpstreamFailure('unavailable', new Errors.upstreamUnavailable(), err);
  return new UpstreamFailure('bad_gateway', new Errors.upstreamBadGateway(), err);
}

/**
 * The catalog connection closed or reset before any byte of the answer, so the request may never
 * have been read: typically a keep-alive connection the catalog closed as idle, on shutdown,
 * while the request was on its way. Such a request is sent again, once, if it is idempotent
 * (RFC 9112 9.3.1).
 */
const CONNECTION_LOST = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);
/**
 * A catalog shutting down answers 503 with `Connection: close` on a connection it has not closed
 * yet (Fastify's return503OnClosing); another connection reaches a replica that still serves.
 */
const CLOSING_RETRIES = 3;
/**
 * Long enough for the pool to have seen the other connections the catalog closed at the same
 * moment, so the retry goes out on a fresh connection rather than another closed one.
 */
const RETRY_DELAY_MS = 10;

export interface CatalogCall {
  method: 'GET' | 'HEAD' | 'POST' | 'DELETE';
  /** Path and query, as the client sent them. */
  path: string;
  headers: Record<string, string | string[]>;
  body?: Buffer;
  /** Bounds of this call's own (undici's, in ms) on the answer's head and on each wait in its body. */
  headersTimeout?: number;
  bodyTimeout?: number;
}

export interface CatalogClientOptions {
  catalogUrl: string;
  timeoutMs: number;
  /** Told of each call sent again, with the error code or status that made it so. */
  onRetry: (reason: string) => void;
}

/**
 * The gateway's calls to the catalog over a keep-alive undici pool, with bounded waits and the
 * retry rule above. Failures come back as UpstreamFailure, mapped to the API's 502/503/504.
 */
export class CatalogClient {
  private readonly pool: Pool;
  private readonly onRetry: (reason: string) => void;

  constructor({ catalogUrl, timeoutMs, onRetry }: CatalogClientOptions) {
    this.pool = new Pool(catalogUrl, {
      connections: 128,
      pipelining: 1,
      keepAliveTimeout: 60_000,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    this.onRetry = onRetry;
  }

  async call(call: CatalogCall): Promise<CatalogAnswer> {
    const idempotent = call.method === 'GET' || call.method === 'HEAD';
    for (let attempt = 0; ; attempt++) {
      const reader = new AnswerReader(call.method === 'HEAD');
      let response: CatalogAnswer;
      try {
        this.pool.dispatch(call, reader);
        response = await reader.answer;
      } catch (err) {
        const code = (err as { code?: string }).code;
        const retryable = !reader.started && code !== undefined && CONNECTION_LOST.has(code);
        if (attempt === 0 && idempotent && retryable) {
          this.onRetry(code);
          await sleep(RETRY_DELAY_MS);
          continue;
        }
        throw upstreamFailure(err);
      }
      if (
        idempotent &&
        attempt < CLOSING_RETRIES &&
        response.statusCode === 503 &&
        response.headers.connection === 'close'
      ) {
        discard(response);
        this.onRetry('503');
        await sleep(RETRY_DELAY_MS);
        continue;
      }
      return response;
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
