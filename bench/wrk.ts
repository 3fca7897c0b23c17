import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { LoadOptions, LoadResult } from './load-types';

export const WRK = '/usr/bin/wrk';

export const wrkInstalled = () => existsSync(WRK);

/** What the script's `done` prints after this marker: wrk's own figures, as JSON. */
const MARKER = 'BENCH_WRK_JSON ';

/**
 * `done` reports the summary as JSON (latency percentiles in µs). With a unique-URL prefix,
 * `request` gives every request of every thread a URL of its own; otherwise wrk sends its one
 * pre-built request, the cheapest way it has.
 */
function script(uniquePrefix: string | undefined): string {
  const done = `
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('${MARKER}{"requests":%.0f,"durationMicros":%.0f,"p50":%.0f,"p99":%.0f,' ..
    '"status":%.0f,"connect":%.0f,"read":%.0f,"write":%.0f,"timeout":%.0f}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
`;
  if (uniquePrefix === undefined) return done;
  return `
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end
local counter = 0
request = function()
  counter = counter + 1
  return wrk.format(nil, wrk.path .. "${uniquePrefix}" .. id .. "-" .. counter)
end
${done}`;
}

interface WrkSummary {
  requests: number;
  durationMicros: number;
  p50: number;
  p99: number;
  status: number;
  connect: number;
  read: number;
  write: number;
  timeout: number;
}

/**
 * Keep-alive load by Debian's wrk (C, one thread per CPU that the measured server leaves to
 * the rest), so the load generator takes little of the CPU it shares with Redis and the catalog.
 * `non2xx` is wrk's count of answers with a status of 400 or more.
 */
export async function wrkLoad(
  url: string,
  { headers = {}, seconds = 5, connections = 32 }: LoadOptions,
  uniquePrefix?: string,
): Promise<LoadResult> {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-wrk-'));
  const file = path.join(dir, 'load.lua');
  writeFileSync(file, script(uniquePrefix));
  const threads = Math.min(connections, Math.max(1, availableParallelism() - 1));
  const args = [
    ...['--threads', String(threads), '--connections', String(connections)],
    ...['--duration', `${seconds}s`, '--latency', '--script', file],
    ...Object.entries(headers).flatMap(([name, value]) => ['--header', `${name}: ${value}`]),
    url,
  ];
  const { stdout } = await promisify(execFile)(WRK, args).finally(() =>
    rmSync(dir, { recursive: true }),
  );
  const line = stdout.split('\n').find((l) => l.startsWith(MARKER));
  if (!line) throw new Error(`wrk printed no summary:\n${stdout}`);
  const s = JSON.parse(line.slice(MARKER.length)) as WrkSummary;
  return {
    requestsPerSecond: Math.round(s.requests / (s.durationMicros / 1_000_000)),
    requests: s.requests,
    latencyP50Ms: s.p50 / 1000,
    latencyP99Ms: s.p99 / 1000,
    non2xx: s.status,
    errors: s.connect + s.read + s.write + s.timeout,
  };
}
