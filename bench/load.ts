import autocannon from 'autocannon';

export interface LoadResult {
  requestsPerSecond: number;
  requests: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  non2xx: number;
  errors: number;
}

/** Numbers the unique URLs across runs, so a later run never repeats an earlier run's URL. */
let uniqueCounter = 0;

/** Keep-alive load from this process with autocannon. */
export async function load(
  url: string,
  { headers = {}, seconds = 5, connections = 32, uniqueUrls = false } = {},
): Promise<LoadResult> {
  // Every request a URL of its own (an extra, ignored parameter): no response cache can help.
  const requests: autocannon.Request[] | undefined = uniqueUrls
    ? [
        {
          setupRequest: (request) => ({ ...request, path: `${request.path}&n=${uniqueCounter++}` }),
        },
      ]
    : undefined;
  const options = { url, headers, connections, ...(requests ? { requests } : {}) };
  const result = await autocannon({ ...options, duration: seconds });
  return {
    requestsPerSecond: Math.round(result.requests.average),
    requests: result.requests.total,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/** USER_HZ of Linux /proc accounting (`getconf CLK_TCK`), 100 on every mainstream kernel. */
const CLOCK_TICKS_PER_SECOND = 100;

/** User + system CPU time of a process, in microseconds, from /proc. */
export async function processCpuMicros(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1_000_000) / CLOCK_TICKS_PER_SECOND;
}
