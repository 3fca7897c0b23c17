import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';

export interface LoadRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/** How a kept-alive connection closed by the balancer before any answer fails a request. */
const CLOSED_BEFORE_ANSWER = new Set(['UND_ERR_SOCKET', 'ECONNRESET']);

/**
 * Clients calling the balancer: `concurrency` of them, each waiting `pauseMs` between its
 * requests, so the load is steady and bounded whatever the latency. Keep-alive connections, as
 * an API client keeps them. Every answer is counted by status; a request that got no answer is a
 * failure with its error code.
 *
 * A GET whose kept-alive connection the balancer closed before any answer is sent again once, as
 * browsers and HTTP client libraries do: stock nginx takes a new endpoint list by a graceful
 * reload, whose old worker closes its idle client connections, and a request can cross that close
 * (ingress-nginx changes endpoints without a reload). The close shows as a socket closed
 * (UND_ERR_SOCKET) or, when the request's bytes reached the closing worker, as a reset
 * (ECONNRESET). Such resends are counted in `resent`.
 */
export class Load {
  readonly statuses = new Map<number, number>();
  readonly errors: string[] = [];
  /** Answers not in `expected`, first ones kept for the assertion message. */
  readonly unexpected: string[] = [];
  private stopped = false;
  private workers: Promise<void>[] = [];
  private readonly pool: Pool;
  private sent = 0;
  /** GETs sent again after their kept-alive connection closed before any answer. */
  resent = 0;

  constructor(
    baseUrl: string,
    private readonly next: (n: number) => LoadRequest,
    private readonly options: {
      concurrency: number;
      pauseMs: number;
      expected?: number[];
      /** Per-request timeout (undici's headers and body timeouts). */
      timeoutMs?: number;
    },
  ) {
    const timeout = options.timeoutMs ?? 30_000;
    this.pool = new Pool(baseUrl, {
      connections: options.concurrency,
      keepAliveTimeout: 30_000,
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
  }

  get answered(): number {
    let total = 0;
    for (const count of this.statuses.values()) total += count;
    return total;
  }

  count(status: number): number {
    return this.statuses.get(status) ?? 0;
  }

  /** Answers plus requests that got none. */
  get total(): number {
    return this.answered + this.errors.length;
  }

  start(): this {
    for (let i = 0; i < this.options.concurrency; i++) this.workers.push(this.worker());
    return this;
  }

  private async worker(): Promise<void> {
    while (!this.stopped) {
      const request = this.next(this.sent++);
      try {
        const response = await this.send(request);
        const body = await response.body.text();
        const status = response.statusCode;
        this.statuses.set(status, this.count(status) + 1);
        if (this.options.expected && !this.options.expected.includes(status)) {
          if (this.unexpected.length < 10)
            this.unexpected.push(`${request.path}: ${status} ${body}`);
        }
      } catch (err) {
        const { code, message } = err as { code?: string; message: string };
        this.errors.push(`${request.path}: ${code ?? ''} ${message}`);
      }
      if (this.options.pauseMs > 0) await sleep(this.options.pauseMs);
    }
  }

  private async send(request: LoadRequest) {
    const options = {
      method: request.method ?? 'GET',
      path: request.path,
      headers: {
        ...(request.body !== undefined && { 'content-type': 'application/json' }),
        ...request.headers,
      },
      body: request.body,
    };
    try {
      return await this.pool.request(options);
    } catch (err) {
      const { code } = err as { code?: string };
      if (options.method !== 'GET' || code === undefined || !CLOSED_BEFORE_ANSWER.has(code))
        throw err;
      this.resent += 1;
      return this.pool.request(options);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.workers);
    await this.pool.close();
  }
}
