import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import {
  Counter,
  type CounterConfiguration,
  Histogram,
  type HistogramConfiguration,
  type LabelValues,
  Registry,
  collectDefaultMetrics,
} from 'prom-client';

/** A service's metric registry: default process metrics, every series labelled with `service`. */
export function createRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** Latency buckets for an API answering in milliseconds, with room for slow upstreams. */
export const LATENCY_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/**
 * A metric's child for a set of label values, looked up once and kept: prom-client hashes the
 * labels on every `labels()` call, which would be on the path of every request. The label sets
 * are bounded (route templates, methods, statuses), so the map is too.
 */
export function childrenOf<Child>(
  labels: (...values: string[]) => Child,
): (...values: string[]) => Child {
  const children = new Map<string, Child>();
  return (...values) => {
    const key = values.join(' ');
    let child = children.get(key);
    if (child === undefined) {
      child = labels(...values);
      children.set(key, child);
    }
    return child;
  };
}

/** A tallied metric's children: one per label set, made by `make` and listed in `tallies`. */
function talliedChildren<Child>(
  names: readonly string[],
  tallies: Child[],
  make: (labels: LabelValues<string>) => Child,
): (...values: string[]) => Child {
  return childrenOf((...values) => {
    const tally = make(Object.fromEntries(names.map((name, i) => [name, values[i]!])));
    tallies.push(tally);
    return tally;
  });
}

/** One child's increments since the counter was last read. */
class Tally implements Counter.Internal {
  count = 0;
  constructor(readonly labels: LabelValues<string>) {}

  inc(value = 1): void {
    this.count += value;
  }
}

/**
 * A Counter for the path of every request: its children add to a plain number, handed to the
 * counter whenever it is read (a scrape), because prom-client hashes and validates the labels on
 * every `inc()`, a measurable share of the gateway's cost per request
 * (docs/performance.md#current-figures).
 * Every read shows every increment made before it.
 */
export class TalliedCounter<T extends string = string> extends Counter<T> {
  private readonly tally: (...values: string[]) => Tally;

  constructor(config: CounterConfiguration<T>) {
    const tallies: Tally[] = [];
    super({
      ...config,
      collect() {
        for (const tally of tallies) {
          if (tally.count === 0) continue;
          this.inc(tally.labels as LabelValues<T>, tally.count);
          tally.count = 0;
        }
        return config.collect?.call(this);
      },
    });
    const names = config.labelNames ?? [];
    this.tally = talliedChildren(names, tallies, (labels) => new Tally(labels));
  }

  override labels(...values: string[]): Counter.Internal;
  override labels(labels: LabelValues<T>): Counter.Internal;
  override labels(...args: unknown[]): Counter.Internal {
    if (typeof args[0] !== 'string') return super.labels(args[0] as LabelValues<T>);
    return this.tally(...(args as string[]));
  }
}

/** prom-client's record of one label set of a histogram (its `hashMap` values). */
interface HistogramRecord {
  labels: LabelValues<string>;
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

/** One child's observations since the histogram was last read: a count per bucket, the sum. */
class HistogramTally implements Histogram.Internal<string> {
  /** Per upper bound, not cumulative; a value above the last bound counts in `count` only. */
  readonly buckets: number[];
  sum = 0;
  count = 0;
  /** The histogram's record of these labels, found at the first read that needs it. */
  record: HistogramRecord | undefined;

  constructor(
    readonly labels: LabelValues<string>,
    readonly upperBounds: readonly number[],
  ) {
    this.buckets = upperBounds.map(() => 0);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.upperBounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        this.buckets[i]!++;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }

  startTimer(): () => number {
    const started = performance.now();
    return () => {
      const seconds = (performance.now() - started) / 1000;
      this.observe(seconds);
      return seconds;
    };
  }
}

/**
 * A Histogram for the path of every request, as TalliedCounter is a Counter: its children count
 * into plain numbers, added to the histogram's records whenever it is read (a scrape). prom-client
 * validates and hashes the labels on every `observe()`, on the gateway's two histograms for every
 * proxied request (docs/performance.md#current-figures). Every read shows every observation made
 * before it, as prom-client's own histogram would (test/shared/tallied-histogram.test.ts).
 */
export class TalliedHistogram<T extends string = string> extends Histogram<T> {
  private readonly tally: (...values: string[]) => HistogramTally;
  private readonly tallies: HistogramTally[];

  constructor(config: HistogramConfiguration<T>) {
    const tallies: HistogramTally[] = [];
    super({
      ...config,
      collect() {
        for (const tally of tallies) {
          if (tally.count === 0) continue;
          const record = (tally.record ??= recordOf(this, tally.labels));
          tally.buckets.forEach((count, i) => {
            record.bucketValues[tally.upperBounds[i]!]! += count;
            tally.buckets[i] = 0;
          });
          record.sum += tally.sum;
          record.count += tally.count;
          tally.sum = 0;
          tally.count = 0;
        }
        return config.collect?.call(this);
      },
    });
    this.tallies = tallies;
    const names = config.labelNames ?? [];
    // Set by prom-client's constructor: the buckets, ascending.
    const { upperBounds } = this as unknown as { upperBounds: readonly number[] };
    this.tally = talliedChildren(
      names,
      tallies,
      (labels) => new HistogramTally(labels, upperBounds),
    );
  }

  override labels(...values: string[]): Histogram.Internal<T>;
  override labels(labels: LabelValues<T>): Histogram.Internal<T>;
  override labels(...args: unknown[]): Histogram.Internal<T> {
    if (typeof args[0] !== 'string') return super.labels(args[0] as LabelValues<T>);
    return this.tally(...(args as string[]));
  }

  /** Also drops what the children counted since the last read, and the records reset() replaces. */
  override reset(): void {
    super.reset();
    // prom-client's constructor calls reset() before this class has set its fields.
    for (const tally of this.tallies ?? []) {
      tally.buckets.fill(0);
      tally.sum = 0;
      tally.count = 0;
      tally.record = undefined;
    }
  }
}

/** The histogram's record of a label set, made (by `zero`) when there is none yet. */
function recordOf(histogram: Histogram<string>, labels: LabelValues<string>): HistogramRecord {
  const records = () =>
    Object.values((histogram as unknown as { hashMap: Record<string, HistogramRecord> }).hashMap);
  const same = (record: HistogramRecord) =>
    Object.keys(labels).every((name) => record.labels[name] === labels[name]);
  let record = records().find(same);
  if (record === undefined) {
    histogram.zero(labels);
    record = records().find(same)!;
  }
  return record;
}

/** Counts one answered request: by method, route template and status, with its duration. */
export type HttpMetrics = (method: string, route: string, status: number, seconds: number) => void;

const httpMetricsByRegistry = new WeakMap<Registry, HttpMetrics>();

/**
 * `http_requests_total` and `http_request_duration_seconds` by method, route *template* and
 * status code, one pair per registry: Fastify's requests (below) and the gateway's cached-answer
 * path, which answers before Fastify, count into the same series. The template keeps
 * cardinality bounded: no raw URL, slug or key in a label.
 */
export function httpMetricsOf(registry: Registry): HttpMetrics {
  let metrics = httpMetricsByRegistry.get(registry);
  if (metrics !== undefined) return metrics;
  const labelNames = ['method', 'route', 'status_code'] as const;
  const requests = new TalliedCounter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status code',
    labelNames,
    registers: [registry],
  });
  const duration = new TalliedHistogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by method, route template and status code',
    labelNames,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  // Both metrics' children of a label set, found by one lookup per request.
  const childrenFor = childrenOf((...values) => ({
    requests: requests.labels(...values),
    duration: duration.labels(...values),
  }));
  metrics = (method, route, status, seconds) => {
    const children = childrenFor(method, route, String(status));
    children.requests.inc();
    children.duration.observe(seconds);
  };
  httpMetricsByRegistry.set(registry, metrics);
  return metrics;
}

/** Every request Fastify answers, counted in `httpMetricsOf(registry)`. */
export const httpMetricsPlugin = fp<{ registry: Registry }>(
  async function httpMetrics(app: FastifyInstance, { registry }) {
    const count = httpMetricsOf(registry);
    app.addHook('onResponse', (request, reply, done) => {
      count(
        request.method,
        request.routeOptions.url ?? 'unmatched',
        reply.statusCode,
        reply.elapsedTime / 1000,
      );
      done();
    });
  },
  { name: 'http-metrics' },
);

/**
 * `GET /metrics` on its own port (docs/api.md#health-request-ids-and-tracing), so the ingress never
 * routes it and a NetworkPolicy can open it to the monitoring namespace only.
 */
export async function startMetricsServer(
  registry: Registry,
  port: number,
  host: string,
): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end('{"error":"Not found; try /metrics"}');
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
      (err: Error) =>
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: err.message })),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return server;
}
