export interface CircuitEvents {
  /** Redis stopped answering: quota decisions are taken in memory until it answers again. */
  onOpen?: (lastError: unknown) => void;
  /** Redis answered a probe: quota decisions go back to it. */
  onClose?: () => void;
}

export interface CircuitOptions extends CircuitEvents {
  /** Checks that Redis answers, e.g. a PING under the command timeout. */
  probe: () => Promise<unknown>;
}

/** Consecutive failed commands that open the circuit. */
const THRESHOLD = 3;
/** Wait before the first probe; it doubles after each failed probe, up to MAX_BACKOFF_MS. */
const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 5_000;

/**
 * A circuit breaker for the quota's Redis. A stalled Redis keeps its connection open, so
 * ioredis still says "ready" and every command waits for the command timeout: after
 * THRESHOLD consecutive failures the quota stops asking Redis and decides in memory at once.
 * A probe on a timer, not a request, then checks Redis, so the circuit closes when Redis
 * answers again even with no traffic. The back-off starts over only once a quota command
 * succeeds, so a Redis that answers PING but fails every script is not probed every second.
 */
export class RedisCircuit {
  private failures = 0;
  private probesSinceSuccess = 0;
  private state: 'closed' | 'open' | 'probing' = 'closed';
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: CircuitOptions) {}

  /** True while quota commands must not be sent to Redis. */
  get open(): boolean {
    return this.state !== 'closed';
  }

  /** A quota command got an answer from Redis. */
  succeeded(): void {
    this.failures = 0;
    this.probesSinceSuccess = 0;
  }

  /** A quota command failed or timed out. */
  failed(err: unknown): void {
    if (this.state !== 'closed' || ++this.failures < THRESHOLD) return;
    this.state = 'open';
    this.options.onOpen?.(err);
    this.scheduleProbe();
  }

  /** Probes at once instead of at the end of the back-off: the connection is back. */
  probeNow(): void {
    if (this.state !== 'open') return;
    clearTimeout(this.timer);
    void this.runProbe();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private scheduleProbe(): void {
    const delay = Math.min(FIRST_BACKOFF_MS * 2 ** this.probesSinceSuccess, MAX_BACKOFF_MS);
    this.probesSinceSuccess += 1;
    this.timer = setTimeout(() => void this.runProbe(), delay).unref();
  }

  private async runProbe(): Promise<void> {
    this.state = 'probing';
    const answered = await this.options.probe().then(
      () => true,
      () => false,
    );
    if (this.stopped) return;
    if (!answered) {
      this.state = 'open';
      this.scheduleProbe();
      return;
    }
    this.state = 'closed';
    this.failures = 0;
    this.options.onClose?.();
  }
}
