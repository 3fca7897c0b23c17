import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Background work (taking changes into the search index, merging the sorted orders) runs a
 * slice at a time and lets the event loop run between slices: a request waits for one slice at
 * most, and the requests that came meanwhile are all served before the next slice.
 *
 * Under load, the work therefore gets a slice's worth per turn of the event loop against the
 * searches of that turn: the slice's length trades pauses (50 ms at most) against the time a
 * change takes to be served (docs/api.md#catalog-changes-and-freshness: a second). 15 ms keeps
 * both for a 1,000-tool import into 10,000 tools under search load (bench/search-scale.ts; the
 * figures in docs/performance.md#current-figures).
 *
 * A slice is measured in CPU time, so that it does as much work however busy the machine is:
 * measured by the clock, slices shrink on a busy machine while searches do not, and changes
 * wait seconds. The clock still ends a slice the machine keeps waiting.
 */
const SLICE_CPU_MS = 15;
const SLICE_MAX_MS = 40;

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** Tells when the current slice is spent, and lets the event loop run then. */
export class Slices {
  private started = 0;
  private cpuEnds = 0;

  constructor() {
    this.start();
  }

  private start(): void {
    this.started = performance.now();
    this.cpuEnds = cpuMs() + SLICE_CPU_MS;
  }

  /** Whether the current slice is spent (the caller then calls `yield`). */
  spent(): boolean {
    const elapsed = performance.now() - this.started;
    // The process's CPU time is read (a system call) only once the clock says it may be spent.
    return elapsed >= SLICE_MAX_MS || (elapsed >= SLICE_CPU_MS && cpuMs() >= this.cpuEnds);
  }

  /** Lets the event loop run, then starts a new slice. */
  async yield(): Promise<void> {
    await nextTurn();
    this.start();
  }
}

/** Calls `work` on each item, a slice at a time. */
export async function forEachInSlices<T>(
  items: Iterable<T>,
  work: (item: T) => void,
  slices = new Slices(),
): Promise<void> {
  for (const item of items) {
    work(item);
    if (slices.spent()) await slices.yield();
  }
}
