import { Registry } from 'prom-client';
import { TalliedCounter } from '../../services/shared/metrics';

function counterIn(registry: Registry) {
  return new TalliedCounter({
    name: 'test_requests_total',
    help: 'Requests by result',
    labelNames: ['result', 'tier'] as const,
    registers: [registry],
  });
}

const series = async (registry: Registry) =>
  (await registry.metrics()).split('\n').filter((line) => line.startsWith('test_requests_total'));

describe('a counter tallied between reads', () => {
  it('shows every increment made before each read, per label set', async () => {
    const registry = new Registry();
    const counter = counterIn(registry);
    const hits = counter.labels('hit', 'free');
    hits.inc();
    hits.inc();
    counter.labels('miss', 'pro').inc(3);
    expect(await series(registry)).toEqual([
      'test_requests_total{result="hit",tier="free"} 2',
      'test_requests_total{result="miss",tier="pro"} 3',
    ]);
    // A read hands the tallies over once: the next read adds only what came after.
    hits.inc();
    expect(await series(registry)).toEqual([
      'test_requests_total{result="hit",tier="free"} 3',
      'test_requests_total{result="miss",tier="pro"} 3',
    ]);
    expect(await series(registry)).toContain('test_requests_total{result="hit",tier="free"} 3');
  });

  it('gives one child per label set, and still takes labels as an object', async () => {
    const registry = new Registry();
    const counter = counterIn(registry);
    expect(counter.labels('hit', 'free')).toBe(counter.labels('hit', 'free'));
    counter.labels({ result: 'hit', tier: 'free' }).inc();
    counter.labels('hit', 'free').inc();
    expect(await series(registry)).toEqual(['test_requests_total{result="hit",tier="free"} 2']);
    expect((await counter.get()).values).toEqual([
      { labels: { result: 'hit', tier: 'free' }, value: 2 },
    ]);
  });
});
