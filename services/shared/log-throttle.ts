/**
 * At most one log line per key in each window; the events in between are counted and the next
 * line reports how many it stands for.
 */
export class LogThrottle<Key> {
  private readonly windows = new Map<Key, { until: number; suppressed: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Undefined: do not log. A number: log now, saying that many were left out before. */
  admit(key: Key): number | undefined {
    const now = this.now();
    const window = this.windows.get(key);
    if (window && now < window.until) {
      window.suppressed += 1;
      return undefined;
    }
    this.windows.set(key, { until: now + this.windowMs, suppressed: 0 });
    return window?.suppressed ?? 0;
  }
}
