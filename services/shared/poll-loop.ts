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
 * A warning for a failure that repeats while its cause lasts (a store or peer away): logged with
 * the error at most once a minute, saying how many were left out since.
 */
export function throttledWarning(
  logger: Pick<Logger, 'warn'>,
  message: string,
): (err: unknown) => void {
  const throttle = new LogThrottle<'failure'>(FAILURE_LOG_WINDOW_MS);
  return (err) => {
    const suppressed = throttle.admit('failure');
    if (suppressed !== undefined) logger.warn({ err, suppressed }, message);
  };
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
  const warn = throttledWarning(logger, failure);
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      await round();
    } catch (err) {
      warn(err);
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void run(), everyMs).unref();
  return () => clearInterval(timer);
}
