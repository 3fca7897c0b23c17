import { type IncomingHttpHeaders, type ServerResponse, createServer } from 'node:http';
import { type Dispatcher, Pool } from 'undici';
import { INTERNAL_HEADERS } from '../services/shared/contract';

/**
 * The floor of a proxy on Node: `node:http` and an undici pool with the gateway's settings, each
 * request forwarded with the internal headers and its answer collected and written back in one
 * write. No framework, routing, key, quota, log line or metric, and no header rule: what any
 * Node proxy pays the runtime per request, below which no feature can be had.
 */
const token = process.env.INTERNAL_TOKEN ?? 'bench-internal-token-000000';
const pool = new Pool(process.env.CATALOG_URL!, {
  connections: 128,
  pipelining: 1,
  keepAliveTimeout: 60_000,
  headersTimeout: 5_000,
  bodyTimeout: 5_000,
});

/** Collects one answer and writes it to the client. */
class Relay implements Dispatcher.DispatchHandler {
  private statusCode = 0;
  private headers: IncomingHttpHeaders = {};
  private readonly chunks: Buffer[] = [];

  constructor(private readonly res: ServerResponse) {}

  onRequestStart(): void {}

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    this.statusCode = statusCode;
    this.headers = headers;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    // The catalog connection's own headers, not the client's.
    const { headers } = this;
    delete headers.connection;
    delete headers['keep-alive'];
    this.res.writeHead(this.statusCode, headers).end(body);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.res.writeHead(502).end(err.message);
  }
}

const server = createServer((req, res) => {
  const headers = { ...req.headers } as Record<string, string>;
  headers[INTERNAL_HEADERS.token] = token;
  headers[INTERNAL_HEADERS.tier] = 'free';
  pool.dispatch({ method: 'GET', path: req.url!, headers }, new Relay(res));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.send?.({ port: (server.address() as { port: number }).port });
});
