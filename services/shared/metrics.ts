import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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
 * `http_requests_total` and `http_request_duration_seconds` by method, route *template* and
 * status code. The template keeps cardinality bounded: no raw URL, slug or key in a label.
 */
export const httpMetricsPlugin = fp<{ registry: Registry }>(
  async function httpMetrics(app: FastifyInstance, { registry }) {
    const labelNames = ['method', 'route', 'status_code'] as const;
    const requests = new Counter({
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
    // The children of each method, route and status, looked up once: prom-client would hash
    // the labels on every call, on the path of every request.
    const children = new Map<string, { count: () => void; observe: (s: number) => void }>();
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const key = `${request.method} ${reply.statusCode} ${route}`;
      let child = children.get(key);
      if (child === undefined) {
        const status = String(reply.statusCode);
        const counter = requests.labels(request.method, route, status);
        const histogram = duration.labels(request.method, route, status);
        child = { count: () => counter.inc(), observe: (s) => histogram.observe(s) };
        children.set(key, child);
      }
      child.count();
      child.observe(reply.elapsedTime / 1000);
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
