import autocannon from 'autocannon';
import type { LoadOptions, LoadResult } from './load-types';

/**
 * Keep-alive load by autocannon from this process. With `rate`, it sends that many requests per
 * second over all connections (its `overallRate`) instead of as many as the server answers:
 * each connection sends its share of a second as soon as it can, then waits for the next.
 */
export async function autocannonLoad(
  url: string,
  { headers = {}, seconds = 5, connections = 32, rate }: LoadOptions,
  uniquePrefix?: string,
): Promise<LoadResult> {
  let counter = 0;
  const requests: autocannon.Request[] | undefined =
    uniquePrefix === undefined
      ? undefined
      : [
          {
            setupRequest: (request) => ({
              ...request,
              path: `${request.path}${uniquePrefix}${counter++}`,
            }),
          },
        ];
  // Each answer's time in fractional milliseconds: autocannon's own percentiles come from a
  // histogram of whole milliseconds, too coarse for answers that take a fraction of one.
  const times: number[] = [];
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        headers,
        connections,
        duration: seconds,
        ...(requests && { requests }),
        // Raw latencies at a fixed rate: autocannon's coordinated-omission correction takes its
        // per-connection interval in seconds for one in milliseconds, and adds made-up samples.
        ...(rate !== undefined && { overallRate: rate, ignoreCoordinatedOmission: true }),
      },
      (err, done) => (err ? reject(err as Error) : resolve(done)),
    );
    instance.on('response', (_client, _status, _bytes, responseTime) => times.push(responseTime));
  });
  times.sort((a, b) => a - b);
  return {
    requestsPerSecond: Math.round(result.requests.average),
    requests: result.requests.total,
    latencyP50Ms: percentile(times, 0.5),
    latencyP99Ms: percentile(times, 0.99),
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/** The `p` quantile of sorted times, to a microsecond; NaN without any. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const at = sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
  return Math.round(at * 1000) / 1000;
}
