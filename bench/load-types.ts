/** What a load generator is asked for and what it measured: shared by load.ts, wrk.ts and autocannon.ts. */
export interface LoadResult {
  requestsPerSecond: number;
  requests: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  non2xx: number;
  errors: number;
}

export interface LoadOptions {
  headers?: Record<string, string>;
  seconds?: number;
  connections?: number;
  /** Every request a URL of its own (an extra, ignored parameter): no response cache can help. */
  uniqueUrls?: boolean;
  /** Requests per second over all connections instead of as many as answered (autocannon). */
  rate?: number;
}
