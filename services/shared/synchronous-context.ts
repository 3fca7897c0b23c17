import { type Context, type ContextManager, ROOT_CONTEXT } from '@opentelemetry/api';

/**
 * OpenTelemetry's active context, held for the synchronous extent of `with()` only, as the web
 * SDK's StackContextManager does (that package targets browsers). The SDK's default manager for
 * Node keeps the context across `await` with AsyncLocalStorage, which on Node 20 turns on
 * promise hooks for the whole process: at the gateway that cost more than making and exporting
 * its spans (docs/observability.md, "What tracing costs"). Whoever needs the request's context
 * after an `await` takes it from the request (`propagateRequestTrace`).
 */
export class SynchronousContextManager implements ContextManager {
  private current: Context = ROOT_CONTEXT;

  active(): Context {
    return this.current;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    const previous = this.current;
    this.current = context;
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.current = previous;
    }
  }

  /** A function runs in `context` whenever it is called; anything else is returned as it is. */
  bind<T>(context: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = (thisArg: unknown, args: unknown[]) =>
      this.with(context, () => (target as (...a: unknown[]) => unknown).apply(thisArg, args));
    return function bound(this: unknown, ...args: unknown[]) {
      return run(this, args);
    } as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.current = ROOT_CONTEXT;
    return this;
  }
}
