import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Background work (a rebuild of the search index, of the sorted orders) runs a slice at a time
 * and lets the event loop run between slices: requests wait for one slice at most. A slice ends
 * after this much time by the clock, so a slice the machine slowed down ends sooner in work.
 */
export const SLICE_MS = 8;

/** Gives the time left in the current slice, and lets the event loop run once it is spent. */
export class Slices {
  private ends = performance.now() + SLICE_MS;

  /** Whether the current slice is spent (the caller then calls `yield`). */
  spent(): boolean {
    return performance.now() >= this.ends;
  }

  /** Lets the event loop run, then starts a new slice. */
  async yield(): Promise<void> {
    await nextTurn();
    this.ends = performance.now() + SLICE_MS;
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
