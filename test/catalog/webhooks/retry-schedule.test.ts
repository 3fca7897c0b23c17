import { loadCatalogConfig } from '../../../services/catalog/src/config';
import {
  MAX_RETRY_AFTER_MS,
  parseRetryAfter,
  parseRetrySchedule,
  retryDelay,
} from '../../../services/catalog/src/webhooks/retry-schedule';

const S = 1_000;
const MIN = 60 * S;
const H = 60 * MIN;
const env = { INTERNAL_TOKEN: 'internal-token-0123456789' };

describe('webhook retry schedule (docs/api.md#webhook-events-and-deliveries)', () => {
  test('by default: retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h; 10 s to answer', () => {
    const config = loadCatalogConfig(env);
    expect(parseRetrySchedule(config.WEBHOOK_RETRY_SCHEDULE)).toEqual([
      5 * S,
      5 * MIN,
      30 * MIN,
      2 * H,
      5 * H,
      10 * H,
      14 * H,
      20 * H,
      24 * H,
    ]);
    expect(config.WEBHOOK_TIMEOUT_MS).toBe(10_000);
  });

  test('WEBHOOK_RETRY_SCHEDULE takes a list of durations; anything else is a configuration error', () => {
    const config = loadCatalogConfig({ ...env, WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,1s,2m' });
    expect(parseRetrySchedule(config.WEBHOOK_RETRY_SCHEDULE)).toEqual([100, 200, 1_000, 120_000]);
    for (const bad of ['soon', '1s,,2s', '5 s', '1d', '-1s']) {
      expect(() => loadCatalogConfig({ ...env, WEBHOOK_RETRY_SCHEDULE: bad })).toThrow(
        /WEBHOOK_RETRY_SCHEDULE/,
      );
    }
  });

  test('each step has ±10 % jitter, and after the last step the delivery has failed', () => {
    const schedule = [5 * S, 5 * MIN];
    expect(retryDelay(schedule, 1, null, () => 0)).toBe(4_500);
    expect(retryDelay(schedule, 1, null, () => 0.5)).toBe(5_000);
    expect(retryDelay(schedule, 1, null, () => 0.999999)).toBe(5_500);
    expect(retryDelay(schedule, 2, null, () => 0)).toBe(270_000);
    expect(retryDelay(schedule, 3, null, () => 0.5)).toBeNull();
    for (let i = 0; i < 1_000; i++) {
      const delay = retryDelay(schedule, 1)!;
      expect(delay).toBeGreaterThanOrEqual(4_500);
      expect(delay).toBeLessThanOrEqual(5_500);
    }
  });

  test('a later Retry-After wins over the schedule, an earlier one does not, up to 24 h', () => {
    const schedule = [5 * S];
    expect(retryDelay(schedule, 1, 60 * S, () => 0.5)).toBe(60 * S);
    expect(retryDelay(schedule, 1, 1 * S, () => 0.5)).toBe(5 * S);
    expect(retryDelay(schedule, 1, 72 * H, () => 0.5)).toBe(MAX_RETRY_AFTER_MS);
    expect(retryDelay(schedule, 2, 60 * S)).toBeNull();
  });

  test('Retry-After is delay-seconds or an HTTP date', () => {
    const now = Date.parse('2026-03-01T12:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });
});
