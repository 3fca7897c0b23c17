import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Background work (a rebuild of the search index, of the sorted orders) runs a slice at a time
 * and lets the event loop run between slices: requests wait for one slice at most.
 *
 * A slice is measured in CPU time, so that it does the same work however busy the machine is:
 * between two slices the event loop serves the requests that came meanwhile, and a slice
 * measured by the clock would shrink to next to nothing on a busy machine, leaving changes
 * unserved for seconds under load. The clock still ends a slice the machine keeps waiting.
 */
export const SLICE_CPU_MS = 10;
export const SLICE_MAX_MS = 30;

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
