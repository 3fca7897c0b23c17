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
  const result = await autocannon({
    url,
    headers,
    connections,
    duration: seconds,
    ...(requests && { requests }),
    // Raw latencies at a fixed rate: autocannon's coordinated-omission correction takes its
    // per-connection interval in seconds for one in milliseconds, and adds made-up samples.
    ...(rate !== undefined && { overallRate: rate, ignoreCoordinatedOmission: true }),
  });
  return {
    requestsPerSecond: Math.round(result.requests.average),
    requests: result.requests.total,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}
