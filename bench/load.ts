import { readFile } from 'node:fs/promises';
import { autocannonLoad } from './autocannon';
import { MICROS_PER_TICK } from './cpu-layout';
import type { LoadOptions, LoadResult } from './load-types';
import { wrkInstalled, wrkLoad } from './wrk';

export type { LoadOptions, LoadResult };

export type LoadGenerator = 'wrk' | 'autocannon';

/**
 * wrk when Debian's is installed: on the CPU it shares with Redis and the catalog it leaves the
 * measured server saturated where autocannon (JavaScript) does not. `BENCH_LOAD=autocannon`
 * chooses autocannon anyway, to compare.
 */
export const loadGenerator: LoadGenerator =
  process.env.BENCH_LOAD === 'autocannon' || !wrkInstalled() ? 'autocannon' : 'wrk';

/** Numbers the runs, so a run's unique URLs never repeat an earlier run's. */
let runs = 0;

/** Keep-alive load from the chosen generator; a fixed `rate` always runs on autocannon. */
export function load(url: string, options: LoadOptions = {}): Promise<LoadResult> {
  const uniquePrefix = options.uniqueUrls
    ? `${url.includes('?') ? '&' : '?'}n=${runs++}-`
    : undefined;
  return loadGenerator === 'wrk' && options.rate === undefined
    ? wrkLoad(url, options, uniquePrefix)
    : autocannonLoad(url, options, uniquePrefix);
}

/** The CPU time fields of /proc/<pid>/stat, from utime on, in microseconds. */
async function cpuFields(pid: number | 'self'): Promise<number[]> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields.slice(11, 15).map((ticks) => Number(ticks) * MICROS_PER_TICK);
}

/** User + system CPU time of a process, in microseconds, from /proc. */
export async function processCpuMicros(pid: number): Promise<number> {
  const [user, system] = await cpuFields(pid);
  return user! + system!;
}

/**
 * CPU time of the load generator so far: this process (autocannon) and its children that have
 * ended (wrk, once it exits), in microseconds.
 */
export async function loadGeneratorCpuMicros(): Promise<number> {
  return (await cpuFields('self')).reduce((sum, micros) => sum + micros, 0);
}
