import { createHmac } from 'node:crypto';
import type { WebhookEvent } from './webhook-types';

const SECRET_PREFIX = 'whsec_';

/**
 * docs/api.md#webhook-events-and-deliveries's body, exactly: `{type, timestamp, data}` in that
 * order.
 */
export function eventBody(event: WebhookEvent): string {
  return JSON.stringify({ type: event.type, timestamp: event.timestamp, data: event.data });
}

/**
 * Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed by the
 * base64-decoded part of the `whsec_` secret.
 */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(
    secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
    'base64',
  );
  const digest = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${digest}`;
}

/** The three Standard Webhooks headers of one attempt made at `at`. */
export function signedHeaders(
  secret: string,
  eventId: string,
  body: string,
  at: Date,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature(secret, eventId, timestamp, body),
  };
}
