import { Histogram, Registry } from 'prom-client';
import { LATENCY_BUCKETS, TalliedHistogram } from '../../services/shared/metrics';

const config = {
  help: 'Time to answer, by route and status',
  labelNames: ['route', 'status_code'] as const,
  buckets: LATENCY_BUCKETS,
};

/** A tallied histogram and prom-client's own, each in a registry of its own, under one name. */
function pair() {
  const tallied = new Registry();
  const plain = new Registry();
  return {
    tallied: new TalliedHistogram({ ...config, name: 'test_seconds', registers: [tallied] }),
    plain: new Histogram({ ...config, name: 'test_seconds', registers: [plain] }),
    exposition: async () => [await tallied.metrics(), await plain.metrics()],
  };
}

/** Below the first bound, on a bound, between bounds, on the last bound and above it. */
const VALUES = [0, 0.0004, 0.001, 0.003, 0.25, 0.2500001, 9.99, 10, 12.5];

describe('a histogram tallied between reads', () => {
  it('reads as prom-client’s own histogram fed the same values, read after read', async () => {
    const { tallied, plain, exposition } = pair();
    const observe = (route: string, status: string, value: number) => {
      tallied.labels(route, status).observe(value);
      plain.labels(route, status).observe(value);
    };
    for (const value of VALUES) observe('/v1/tools', '200', value);
    observe('/v1/tools/:slug', '404', 0.002);
    const [first, expected] = await exposition();
    expect(first).toBe(expected);
    expect(first).toContain(
      'test_seconds_bucket{le="0.001",route="/v1/tools",status_code="200"} 3',
    );
    expect(first).toContain('test_seconds_count{route="/v1/tools",status_code="200"} 9');

    // A read hands the tallies over once: the next read adds only what came after.
    observe('/v1/tools', '200', 0.02);
    observe('/v1/tools', '503', 5);
    const [second, expectedSecond] = await exposition();
    expect(second).toBe(expectedSecond);
    expect(second).toContain('test_seconds_count{route="/v1/tools",status_code="200"} 10');
    expect((await exposition())[0]).toBe(expectedSecond);
  });

  it('gives one child per label set, still takes labels as an object, and refuses NaN', async () => {
    const { tallied, plain, exposition } = pair();
    expect(tallied.labels('/v1/tools', '200')).toBe(tallied.labels('/v1/tools', '200'));
    tallied.labels({ route: '/v1/tools', status_code: '200' }).observe(0.1);
    tallied.labels('/v1/tools', '200').observe(0.2);
    plain.labels('/v1/tools', '200').observe(0.1);
    plain.labels('/v1/tools', '200').observe(0.2);
    const [actual, expected] = await exposition();
    expect(actual).toBe(expected);
    expect(() => tallied.labels('/v1/tools', '200').observe(Number.NaN)).toThrow(TypeError);
  });

  it('forgets everything on reset, what was counted since the last read included', async () => {
    const { tallied, plain, exposition } = pair();
    tallied.labels('/v1/tools', '200').observe(0.1);
    await exposition();
    tallied.labels('/v1/tools', '200').observe(0.3);
    tallied.reset();
    tallied.labels('/v1/tools', '200').observe(0.5);
    plain.labels('/v1/tools', '200').observe(0.5);
    const [actual, expected] = await exposition();
    expect(actual).toBe(expected);
  });
});
