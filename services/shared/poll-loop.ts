import type { Logger } from 'pino';
import { LogThrottle } from './log-throttle';

const FAILURE_LOG_WINDOW_MS = 60_000;

export interface PollLoopOptions {
  everyMs: number;
  logger: Pick<Logger, 'warn'>;
  /** The warning logged when a round fails (at most once a minute, with the count suppressed). */
  failure: string;
}

/**
 * Runs `round` every `everyMs`, never two at once (a slow source is not asked again before it
 * answered); a failed round is logged, throttled, and the next one tried. Returns a function that
 * stops the loop.
 */
export function pollLoop(
  round: () => Promise<void>,
  { everyMs, logger, failure }: PollLoopOptions,
): () => void {
  const failures = new LogThrottle<'round'>(FAILURE_LOG_WINDOW_MS);
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      await round();
    } catch (err) {
      const suppressed = failures.admit('round');
      if (suppressed !== undefined) logger.warn({ err, suppressed }, failure);
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void run(), everyMs).unref();
  return () => clearInterval(timer);
}
