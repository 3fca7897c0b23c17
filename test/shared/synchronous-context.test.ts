import { ROOT_CONTEXT, createContextKey } from '@opentelemetry/api';
import { SynchronousContextManager } from '../../services/shared/synchronous-context';

const KEY = createContextKey('test');
const outer = ROOT_CONTEXT.setValue(KEY, 'outer');
const inner = ROOT_CONTEXT.setValue(KEY, 'inner');

describe('the gateway’s context manager: the active context within synchronous code only', () => {
  const manager = new SynchronousContextManager();
  const active = () => manager.active().getValue(KEY);

  test('with() makes a context active for its function, nested, and restores the previous one', () => {
    const seen = manager.with(
      outer,
      (a: number, b: number) => {
        const within = manager.with(inner, () => active());
        return [a + b, active(), within];
      },
      undefined,
      1,
      2,
    );
    expect(seen).toEqual([3, 'outer', 'inner']);
    expect(manager.active()).toBe(ROOT_CONTEXT);
  });

  test('the previous context comes back when the function throws', () => {
    expect(() =>
      manager.with(outer, () => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(manager.active()).toBe(ROOT_CONTEXT);
  });

  test('after an await the context is gone: it is not carried across async boundaries', async () => {
    const after = await manager.with(outer, async () => {
      await Promise.resolve();
      return active();
    });
    expect(after).toBeUndefined();
  });

  test('a bound function runs in its context with its own this and arguments; other values pass', () => {
    const bound = manager.bind(outer, function (this: { n: number }, m: number) {
      return [this.n + m, active()];
    });
    expect(bound.call({ n: 1 }, 2)).toEqual([3, 'outer']);
    const value = { not: 'a function' };
    expect(manager.bind(outer, value)).toBe(value);
  });

  test('disable() drops whatever was active', () => {
    manager.with(outer, () => {
      manager.disable();
      expect(manager.active()).toBe(ROOT_CONTEXT);
    });
  });
});
