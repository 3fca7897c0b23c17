import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import {
  Counter,
  type CounterConfiguration,
  Histogram,
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
 * every `inc()`, a measurable share of the gateway's cost per request (docs/performance.md).
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
    this.tally = childrenOf((...values) => {
      const tally = new Tally(Object.fromEntries(names.map((name, i) => [name, values[i]!])));
      tallies.push(tally);
      return tally;
    });
  }

  override labels(...values: string[]): Counter.Internal;
  override labels(labels: LabelValues<T>): Counter.Internal;
  override labels(...args: unknown[]): Counter.Internal {
    if (typeof args[0] !== 'string') return super.labels(args[0] as LabelValues<T>);
    return this.tally(...(args as string[]));
  }
}

/**
 * `http_requests_total` and `http_request_duration_seconds` by method, route *template* and
 * status code. The template keeps cardinality bounded: no raw URL, slug or key in a label.
 */
export const httpMetricsPlugin = fp<{ registry: Registry }>(
  async function httpMetrics(app: FastifyInstance, { registry }) {
    const labelNames = ['method', 'route', 'status_code'] as const;
    const requests = new TalliedCounter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route template and status code',
      labelNames,
      registers: [registry],
    });
    const duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer HTTP requests, by method, route template and status code',
      labelNames,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
    // The counter keeps its own children; the histogram's are looked up once here.
    const timed = childrenOf((...values) => duration.labels(...values));
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const status = String(reply.statusCode);
      requests.labels(request.method, route, status).inc();
      timed(request.method, route, status).observe(reply.elapsedTime / 1000);
      done();
    });
  },
  { name: 'http-metrics' },
);

/**
 * `GET /metrics` on its own port (SPEC B8), so the ingress never routes it and a
 * NetworkPolicy can open it to the monitoring namespace only.
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
