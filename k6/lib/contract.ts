import type { RefinedResponse, ResponseType } from 'k6/http';
import { header } from './target';

type Response = RefinedResponse<ResponseType>;

/**
 * docs/api.md#quotas-and-rate-limit-headers: the five rate-limit headers, consistent with each
 * other, on every keyed answer.
 */
export function hasRateLimitHeaders(res: Response): boolean {
  const limit = Number(header(res, 'x-ratelimit-limit'));
  const remaining = Number(header(res, 'x-ratelimit-remaining'));
  const reset = Number(header(res, 'x-ratelimit-reset'));
  return (
    limit > 0 &&
    remaining >= 0 &&
    remaining <= limit &&
    reset % 86_400 === 0 &&
    header(res, 'ratelimit-policy') === `"daily";q=${limit};w=86400` &&
    new RegExp(`^"daily";r=${remaining};t=\\d+$`).test(header(res, 'ratelimit') ?? '')
  );
}

/** docs/api.md#errors: every error is JSON `{ "error": "<message>" }`. */
export function isJsonError(res: Response): boolean {
  if (!(header(res, 'content-type') ?? '').startsWith('application/json')) return false;
  const body = res.json() as { error?: unknown } | null;
  return typeof body?.error === 'string';
}

/** A success envelope: `data` and `meta.attribution` (docs/api.md#response-bodies). */
export function isEnvelope(res: Response): boolean {
  const body = res.json() as { data?: unknown; meta?: { attribution?: unknown } } | null;
  return body?.data !== undefined && typeof body.meta?.attribution === 'string';
}
