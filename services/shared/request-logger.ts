import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LevelWithSilentOrString, LogFn, Logger } from 'pino';

/** pino's methods that write a line, each passed on to the child. */
const WRITERS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * A request's logger that makes its pino child (the request id binding) only when something is
 * written through it. Fastify makes the child for every request, a cost on every request
 * (docs/performance.md#current-figures), while most requests write no line of their own: the
 * access line goes through a logger of its own (request-log.ts), which only asks this one whether
 * its level is on.
 */
class RequestLogger implements FastifyBaseLogger {
  declare fatal: LogFn;
  declare error: LogFn;
  declare warn: LogFn;
  declare info: LogFn;
  declare debug: LogFn;
  declare trace: LogFn;
  declare silent: LogFn;

  static {
    // On the prototype, not per instance: a request makes only this object.
    for (const name of WRITERS) {
      this.prototype[name] = function (this: RequestLogger, ...args: unknown[]) {
        const logger = this.logger;
        (logger[name] as (...line: unknown[]) => void).apply(logger, args);
      };
    }
  }

  private made: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly ownBindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  /** The pino child, made at the first line or setting. */
  private get logger(): Logger {
    return (this.made ??= this.parent.child(this.ownBindings, this.options));
  }

  /** Who decides a level: the parent, unless the route set a level (`logLevel`) or it was set. */
  private get decides(): Pick<Logger, 'level' | 'isLevelEnabled'> {
    return this.made ?? (this.options.level === undefined ? this.parent : this.logger);
  }

  get level(): LevelWithSilentOrString {
    return this.decides.level;
  }

  set level(level: LevelWithSilentOrString) {
    this.logger.level = level;
  }

  isLevelEnabled(level: LevelWithSilentOrString): boolean {
    return this.decides.isLevelEnabled(level);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }

  bindings(): Bindings {
    return this.logger.bindings();
  }

  setBindings(bindings: Bindings): void {
    this.logger.setBindings(bindings);
  }

  flush(callback?: (err?: Error) => void): void {
    this.logger.flush(callback);
  }
}

/** Fastify's `childLoggerFactory`: each request's logger, its pino child made when first used. */
export function requestLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new RequestLogger(logger as Logger, bindings, options);
}
