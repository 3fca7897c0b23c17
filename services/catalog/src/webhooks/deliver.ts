import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { parseRetryAfter } from './retry-schedule';
import { eventBody, signedHeaders } from './signature';
import { type Resolver, UnsafeUrlError, checkWebhookUrl } from './ssrf-guard';
import type { Subscription, WebhookEvent } from './webhook-types';

export const USER_AGENT = 'ToolDirectory-Webhooks/1.0';

export interface DeliverOptions {
  /** A 2xx must arrive within this time, name resolution and connection included. */
  timeoutMs: number;
  /** WEBHOOK_ALLOW_PRIVATE: http and private addresses allowed (development, tests). */
  allowPrivate: boolean;
  /** How names are resolved for the check; tests inject one. */
  resolve?: Resolver;
  now?: () => Date;
}

/** What one attempt came to; the caller decides about retries. */
export type AttemptResult =
  | { outcome: 'delivered'; statusCode: number }
  /** 410 Gone: the receiver asks for the subscription to be disabled. */
  | { outcome: 'gone'; statusCode: 410 }
  | {
      outcome: 'failed';
      statusCode: number | null;
      error: string | null;
      /** From `Retry-After` on a 429 or 503: the next attempt not before this. */
      retryAfterMs: number | null;
    };

/** Largest part of a response body read (and dropped) before the connection is let go. */
const MAX_BODY_BYTES = 64 * 1024;

/**
 * One POST of `event` to the subscription. The URL is checked again at every attempt, and the
 * connection goes to the address that check approved: a name that resolved to a public address
 * when subscribing and resolves to loopback now is refused without connecting, and a name
 * cannot resolve differently between the check and the connection (DNS rebinding). The host
 * name stays the request's Host and the TLS server name, so certificates are verified as usual.
 * Redirects are not followed: a 3xx is a failure.
 */
export async function deliverOnce(
  subscription: Pick<Subscription, 'url' | 'secret'>,
  event: WebhookEvent,
  options: DeliverOptions,
): Promise<AttemptResult> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  const failed = (error: string) =>
    ({ outcome: 'failed', statusCode: null, error, retryAfterMs: null }) as const;
  let agent: Agent | undefined;
  try {
    const { url, addresses } = await untilAborted(
      checkWebhookUrl(subscription.url, {
        allowPrivate: options.allowPrivate,
        ...(options.resolve && { resolve: options.resolve }),
      }),
      signal,
    );
    agent = new Agent({ connect: { lookup: pinnedLookup(addresses) } });
    const body = eventBody(event);
    const now = options.now?.() ?? new Date();
    const response = await request(url, {
      method: 'POST',
      dispatcher: agent,
      signal,
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        ...signedHeaders(subscription.secret, event.id, body, now),
      },
      body,
    });
    await response.body.dump({ limit: MAX_BODY_BYTES }).catch(() => undefined);
    const { statusCode } = response;
    if (statusCode >= 200 && statusCode < 300) return { outcome: 'delivered', statusCode };
    if (statusCode === 410) return { outcome: 'gone', statusCode };
    const retryAfter = response.headers['retry-after'];
    return {
      outcome: 'failed',
      statusCode,
      error: statusCode >= 300 && statusCode < 400 ? 'Redirect not followed' : null,
      retryAfterMs:
        statusCode === 429 || statusCode === 503
          ? parseRetryAfter(typeof retryAfter === 'string' ? retryAfter : undefined, Date.now())
          : null,
    };
  } catch (err) {
    if (err instanceof UnsafeUrlError) return failed(`Refused: ${err.message}`);
    if (signal.aborted) return failed(`No answer within ${options.timeoutMs} ms`);
    return failed(err instanceof Error ? err.message : String(err));
  } finally {
    // One agent per attempt: no pooled connection outlives the check that approved its address.
    void agent?.destroy().catch(() => undefined);
  }
}

/** A `lookup` for net/tls that answers with the checked addresses only, never asking DNS. */
function pinnedLookup(addresses: readonly string[]) {
  const entries: LookupAddress[] = addresses.map((address) => ({
    address,
    family: isIP(address),
  }));
  return (
    _hostname: string,
    options: LookupOptions,
    callback: (
      err: NodeJS.ErrnoException | null,
      address: string | LookupAddress[],
      family?: number,
    ) => void,
  ) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
    const usable = family ? entries.filter((e) => e.family === family) : entries;
    const first = usable[0];
    if (!first) {
      callback(
        Object.assign(new Error('No checked address of that family'), { code: 'ENOTFOUND' }),
        [],
      );
    } else if (options.all) callback(null, usable);
    else callback(null, first.address, first.family);
  };
}

/** The promise's result, or the signal's abort, whichever comes first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}
