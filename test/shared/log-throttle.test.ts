import { LogThrottle } from '../../services/shared/log-throttle';

describe('LogThrottle', () => {
  test('one line per key and window; the next line counts those left out', () => {
    let now = 0;
    const throttle = new LogThrottle<string>(10_000, () => now);
    expect(throttle.admit('unavailable')).toBe(0);
    expect(throttle.admit('unavailable')).toBeUndefined();
    expect(throttle.admit('timeout')).toBe(0);
    now = 9_999;
    expect(throttle.admit('unavailable')).toBeUndefined();
    now = 10_000;
    expect(throttle.admit('unavailable')).toBe(2);
    expect(throttle.admit('timeout')).toBe(0);
    expect(throttle.admit('unavailable')).toBeUndefined();
    now = 30_000;
    expect(throttle.admit('unavailable')).toBe(1);
  });
});
