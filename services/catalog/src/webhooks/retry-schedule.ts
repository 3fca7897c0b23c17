/**
 * docs/api.md#webhook-events-and-deliveries: after the first attempt, retries after 5 s, 5 min, 30
 * min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h.
 */
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,24h';

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;
const DURATION = '\\d+(?:ms|s|m|h)';
/** A comma-separated list of durations such as `100ms,2s,5m,24h` (the setting's format). */
export const RETRY_SCHEDULE_PATTERN = `^${DURATION}(?:,${DURATION})*$`;

/** Each step of the jitter is this fraction either way, so retries of many events spread out. */
const JITTER = 0.1;

/**
 * A `Retry-After` later than this is cut to it: a receiver cannot park a delivery in the queue
 * for longer than the schedule's longest step (docs/webhook-deliveries.md).
 */
export const MAX_RETRY_AFTER_MS = 24 * UNIT_MS.h;

/** The waits before each retry, in milliseconds, from the setting's text. */
export function parseRetrySchedule(text: string): number[] {
  if (!new RegExp(RETRY_SCHEDULE_PATTERN).test(text)) {
    throw new Error(`Not a list of durations (like 5s,5m,2h): ${text}`);
  }
  return text.split(',').map((step) => {
    const [, amount, unit] = /^(\d+)(ms|s|m|h)$/.exec(step)!;
    return Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
  });
}

/**
 * How long to wait after failed attempt number `attempt` (1 = the first), or null when the
 * schedule is used up and the delivery has failed. The schedule's step gets ±10 % jitter; a
 * receiver's `Retry-After` (429/503) pushes the retry later, never earlier.
 */
export function retryDelay(
  schedule: readonly number[],
  attempt: number,
  retryAfterMs: number | null = null,
  random: () => number = Math.random,
): number | null {
  const step = schedule[attempt - 1];
  if (step === undefined) return null;
  const jittered = Math.max(0, Math.round(step * (1 - JITTER + 2 * JITTER * random())));
  return Math.max(jittered, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
}

/**
 * A `Retry-After` header in milliseconds from `now`: delay-seconds or an HTTP date (RFC 9110
 * 10.2.3). Null when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | null {
  const text = value?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Number(text) * 1_000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
