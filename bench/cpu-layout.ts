import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/**
 * Where the benchmark's processes run. The measured server gets the last CPU to itself; the
 * load generator and the servers it depends on share the others. Without this they all compete
 * for the same cores, and a server's CPU time per request then also counts cache and scheduler
 * interference from the load generator. Needs `taskset` (util-linux) and two CPUs or more;
 * otherwise nothing is pinned and the report says so.
 */
export interface CpuLayout {
  measured: string;
  others: string;
}

export function cpuLayout(): CpuLayout | null {
  const cpus = availableParallelism();
  if (cpus < 2) return null;
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
  } catch {
    return null;
  }
  return { measured: String(cpus - 1), others: cpus === 2 ? '0' : `0-${cpus - 2}` };
}

/** Moves a running process, every thread of it, onto the given CPUs. */
export function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cpus, String(pid)], {
    stdio: 'ignore',
  });
}

/**
 * CPU time the hypervisor gave to other guests (the `steal` column of /proc/stat), in clock
 * ticks summed over all CPUs. Steal during a run means its figures are noisier than usual.
 */
export function stealTicks(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
  return Number(fields[8]);
}

/** A clock tick of /proc accounting in µs (USER_HZ, `getconf CLK_TCK`: 100 on mainstream Linux). */
export const MICROS_PER_TICK = 10_000;

/**
 * Time one CPU spent busy (user, nice, system, irq, softirq columns of /proc/stat), in µs. Less
 * the measured server's own CPU time, it shows what else ran on the measured CPU.
 */
export function busyMicros(cpu: string): number {
  const line = readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`cpu${cpu} `));
  const [, user, nice, system, , , irq, softirq] = line!.trim().split(/\s+/).map(Number);
  return (user! + nice! + system! + irq! + softirq!) * MICROS_PER_TICK;
}
