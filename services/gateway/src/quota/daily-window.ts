const DAY_MS = 86_400_000;

/** Current time in milliseconds; injected so tests can cross midnight. */
export type Clock = () => number;

/**
 * The quota window of docs/api.md#quotas-and-rate-limit-headers: the UTC calendar day. Counters are
 * keyed by the date, so a new day starts a new counter even if an old one has not expired yet.
 */
export interface DailyWindow {
  /** UTC date, `YYYY-MM-DD`: part of every counter key. */
  date: string;
  /** Unix time in seconds of the next 00:00:00 UTC. */
  resetAt: number;
  /** Seconds until then, never under 1 (a TTL of 0 would mean "no expiry"). */
  secondsToReset: number;
}

/**
 * The window for a given instant. The date string is formatted once a day, not per request:
 * this runs on every admitted request.
 */
export class DailyWindows {
  private dayStart = Number.NaN;
  private date = '';

  at(nowMs: number): DailyWindow {
    const dayStart = nowMs - (nowMs % DAY_MS);
    if (dayStart !== this.dayStart) {
      this.dayStart = dayStart;
      this.date = new Date(dayStart).toISOString().slice(0, 10);
    }
    const nextMidnight = dayStart + DAY_MS;
    return {
      date: this.date,
      resetAt: nextMidnight / 1000,
      secondsToReset: Math.max(1, Math.ceil((nextMidnight - nowMs) / 1000)),
    };
  }
}
