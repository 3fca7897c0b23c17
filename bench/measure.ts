import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { busyMicros, cpuLayout, pin, stealTicks } from './cpu-layout';
import {
  type LoadGenerator,
  type LoadResult,
  load,
  loadGenerator,
  loadGeneratorCpuMicros,
  processCpuMicros,
} from './load';

/**
 * Measured runs against servers in their own processes: keep-alive load from this process (or
 * wrk, its child), the server's CPU time read from /proc around the measured part.
 */

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/**
 * Each repeat's SECONDS of a target are measured in this many slices, interleaved with the other
 * targets' (a round of 1 s slices over every target, SLICES times). On a shared host a slow spell
 * lasts seconds to minutes: measured in one block, it could land on one target and not on the
 * target it is compared with (the same gateway's CPU per request could nearly double within a
 * minute); spread over slices, it lands on every target of the repeat alike.
 */
export const SLICES = Math.max(1, Number(process.env.BENCH_SLICES ?? 5));
/** wrk takes whole seconds. */
export const SLICE_SECONDS = Math.max(1, Math.round(SECONDS / SLICES));
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
export const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);
/**
 * Load each target takes once, unmeasured, before its first measured run. A process just started
 * costs up to twice its later CPU per request after the 1 s warm-up of every run
 * (docs/performance.md#method: its code still being optimized, its heap still growing), which
 * put the first repeat of each target, and often the median, far from the rest.
 */
export const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 5);
export const layout = cpuLayout();
/** Steal above this share of the machine's CPU makes a run's figures unreliable. */
const STEAL_WARNING = 10;
/** Other work on the measured CPU above this share of it disturbed the server's figures. */
const OTHERS_WARNING = 10;
/** Below this share of its CPU the measured server was not the limit of a saturation run. */
export const SATURATED_PERCENT = 90;

export const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

export interface Target {
  pid: number;
  url: string;
  headers: Record<string, string>;
  /** Every request a URL of its own, so no response cache can answer. */
  uniqueUrls?: boolean;
  /** Quota work counted during the measured part: Redis commands and admitted requests. */
  quota?: { redis: Redis; admitted: () => Promise<number> };
  /** Processes the target calls (catalog, Redis), by name: their CPU time is read alongside. */
  alongside?: Record<string, number>;
}

export interface Measurement extends LoadResult {
  /** The measured server's CPU time, the measured wall time and the load's own duration, in µs. */
  cpuMicros: number;
  wallMicros: number;
  loadMicros: number;
  /** The load generator's CPU time, in µs. */
  generatorMicros: number;
  cpuMicrosPerRequest: number;
  /** The measured server's CPU time ÷ the load's duration, in %. */
  serverCpuPercent: number;
  loadGenerator: LoadGenerator;
  /** The load generator's CPU time ÷ the same duration, in %: near 100 % it was the limit. */
  loadGeneratorCpuPercent: number;
  /** Redis commands and admitted requests during the measured part, for a target with quota. */
  quota?: { sent: number; executed: number; admitted: number };
  /** CPU time of the target's `alongside` processes during the measured part, in µs, by name. */
  alongsideCpuMicros?: Record<string, number>;
  /** Share of the machine's CPU time the hypervisor stole during the run. */
  stealPercent: number;
  /**
   * Busy time of the measured CPU not spent by the server (other processes, interrupts), in %
   * of the wall time; null when nothing is pinned.
   */
  othersOnMeasuredCpuPercent: number | null;
  /** Slices of this measurement taken again because the hypervisor or other work disturbed them. */
  retriedSlices?: number;
}

/**
 * Commands in INFO commandstats: `sent` counts the commands clients send to run a script
 * (EVALSHA/EVAL: one round trip each), `executed` every command Redis executed, including those
 * the quota script runs inside itself.
 */
export function redisCalls(commandstats: string): { sent: number; executed: number } {
  let sent = 0;
  let executed = 0;
  for (const [, name, calls] of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (name === 'info') continue;
    executed += Number(calls);
    if (name === 'evalsha' || name === 'eval') sent += Number(calls);
  }
  return { sent, executed };
}

/** CPU time so far of each named process, in µs. */
async function alongsideCpu(pids: Record<string, number>): Promise<Record<string, number>> {
  const entries = await Promise.all(
    Object.entries(pids).map(async ([name, pid]) => [name, await processCpuMicros(pid)] as const),
  );
  return Object.fromEntries(entries);
}

async function quotaCounts({ redis, admitted }: NonNullable<Target['quota']>) {
  return { ...redisCalls(await redis.info('commandstats')), admitted: await admitted() };
}

/**
 * One measured run against a server: a warm-up (the server has just been moved onto the measured
 * CPU), then `seconds` of load, with the server's CPU time read around the measured part only.
 * The server has the measured CPU to itself meanwhile. With `rate`, the load is that many
 * requests per second instead of as many as answered.
 */
export function measure(
  target: Target,
  { rate, seconds = SECONDS, warmUpSeconds = 1 }: MeasureOptions = {},
): Promise<Measurement> {
  return onMeasuredCpu(target.pid, async () => {
    const options = { ...loadOptions(target), ...(rate !== undefined && { rate }) };
    await load(target.url, { ...options, seconds: warmUpSeconds });
    // Requests still in flight when a load stops reach the server and Redis too: let them end.
    await setTimeout(250);
    const quotaBefore = target.quota && (await quotaCounts(target.quota));
    const alongsideBefore = target.alongside && (await alongsideCpu(target.alongside));
    const cpuBefore = await processCpuMicros(target.pid);
    const generatorBefore = await loadGeneratorCpuMicros();
    const stealBefore = stealTicks();
    const busyBefore = layout && busyMicros(layout.measured);
    const started = performance.now();
    const result = await load(target.url, { ...options, seconds });
    const wallMicros = (performance.now() - started) * 1000;
    const stolen = stealTicks() - stealBefore;
    const measuredCpuBusy = layout && busyMicros(layout.measured) - busyBefore!;
    const cpuMicros = (await processCpuMicros(target.pid)) - cpuBefore;
    const generatorMicros = (await loadGeneratorCpuMicros()) - generatorBefore;
    const alongsideAfter = target.alongside && (await alongsideCpu(target.alongside));
    await setTimeout(250);
    const quotaAfter = target.quota && (await quotaCounts(target.quota));
    // The load's own duration, without the generator's start and exit around it.
    const loadMicros = (result.requests / result.requestsPerSecond) * 1e6;
    return {
      ...result,
      ...(quotaBefore &&
        quotaAfter && {
          quota: {
            sent: quotaAfter.sent - quotaBefore.sent,
            executed: quotaAfter.executed - quotaBefore.executed,
            admitted: quotaAfter.admitted - quotaBefore.admitted,
          },
        }),
      ...(alongsideBefore &&
        alongsideAfter && {
          alongsideCpuMicros: Object.fromEntries(
            Object.entries(alongsideAfter).map(([name, micros]) => [
              name,
              micros - alongsideBefore[name]!,
            ]),
          ),
        }),
      cpuMicros,
      wallMicros,
      loadMicros,
      generatorMicros,
      cpuMicrosPerRequest: Math.round((cpuMicros / result.requests) * 10) / 10,
      serverCpuPercent: Math.round((cpuMicros / loadMicros) * 100),
      loadGenerator: rate === undefined ? loadGenerator : 'autocannon',
      loadGeneratorCpuPercent: Math.round((generatorMicros / loadMicros) * 100),
      stealPercent: Math.round((stolen / (seconds * 100 * availableParallelism())) * 1000) / 10,
      othersOnMeasuredCpuPercent:
        measuredCpuBusy === null
          ? null
          : Math.max(0, Math.round(((measuredCpuBusy - cpuMicros) / wallMicros) * 100)),
    };
  });
}

export interface MeasureOptions {
  rate?: number;
  seconds?: number;
  warmUpSeconds?: number;
}

const loadOptions = (target: Target) => ({
  headers: target.headers,
  connections: CONNECTIONS,
  uniqueUrls: target.uniqueUrls ?? false,
});

/** Runs `work` with the server alone on the measured CPU, then puts it back with the others. */
async function onMeasuredCpu<T>(pid: number, work: () => Promise<T>): Promise<T> {
  if (layout) pin(pid, layout.measured);
  try {
    return await work();
  } finally {
    if (layout) pin(pid, layout.others);
  }
}

/** WARMUP_SECONDS of the target's load, on the measured CPU, not measured. */
async function warmUp(target: Target): Promise<void> {
  if (WARMUP_SECONDS <= 0) return;
  await onMeasuredCpu(target.pid, () =>
    load(target.url, { ...loadOptions(target), seconds: WARMUP_SECONDS }),
  );
}

/**
 * The run whose CPU per request is the median of the repeats, so one noisy run cannot lead. A
 * run without a single answer (NaN per request) counts as the costliest.
 */
function medianRun(runs: Measurement[]): Measurement {
  const cost = (r: Measurement) =>
    Number.isFinite(r.cpuMicrosPerRequest) ? r.cpuMicrosPerRequest : Infinity;
  return [...runs].sort((a, b) => cost(a) - cost(b))[runs.length >> 1]!;
}

/** A run the hypervisor or another process disturbed, by the thresholds the report warns at. */
const disturbed = (run: Measurement) =>
  run.stealPercent > STEAL_WARNING || (run.othersOnMeasuredCpuPercent ?? 0) > OTHERS_WARNING;

/**
 * Slices measured again, at most this many per slice, when the hypervisor or another process
 * took the CPU during one (what the report's warnings ask a reader to do by hand). A run counts
 * the slices it retried.
 */
const RETRIES = Number(process.env.BENCH_RETRIES ?? 2);

/** A slice of a run, measured again while disturbed (up to RETRIES times); the last one counts. */
async function measureSlice(target: Target): Promise<{ slice: Measurement; retried: number }> {
  const options = { seconds: SLICE_SECONDS, warmUpSeconds: 1 };
  let slice = await measure(target, options);
  let retried = 0;
  while (retried < RETRIES && disturbed(slice)) {
    slice = await measure(target, options);
    retried++;
  }
  return { slice, retried };
}

/**
 * The slices of one run as one measurement: sums of requests and times; rates and shares over
 * the load's duration (steal and other work weighted by it); p50 the slices' median, p99 their
 * highest.
 */
function combine(slices: Measurement[], retriedSlices: number): Measurement {
  const sum = (pick: (m: Measurement) => number) => slices.reduce((t, m) => t + pick(m), 0);
  const requests = sum((m) => m.requests);
  const cpuMicros = sum((m) => m.cpuMicros);
  const loadMicros = sum((m) => m.loadMicros);
  const generatorMicros = sum((m) => m.generatorMicros);
  const weighted = (pick: (m: Measurement) => number) =>
    Math.round((sum((m) => pick(m) * m.loadMicros) / loadMicros) * 10) / 10;
  const p50s = slices.map((m) => m.latencyP50Ms).sort((a, b) => a - b);
  const first = slices[0]!;
  return {
    requests,
    requestsPerSecond: Math.round(requests / (loadMicros / 1e6)),
    latencyP50Ms: p50s[p50s.length >> 1]!,
    latencyP99Ms: Math.max(...slices.map((m) => m.latencyP99Ms)),
    non2xx: sum((m) => m.non2xx),
    errors: sum((m) => m.errors),
    cpuMicros,
    wallMicros: sum((m) => m.wallMicros),
    loadMicros,
    generatorMicros,
    cpuMicrosPerRequest: Math.round((cpuMicros / requests) * 10) / 10,
    serverCpuPercent: Math.round((cpuMicros / loadMicros) * 100),
    loadGenerator: first.loadGenerator,
    loadGeneratorCpuPercent: Math.round((generatorMicros / loadMicros) * 100),
    ...(first.alongsideCpuMicros && {
      alongsideCpuMicros: Object.fromEntries(
        Object.keys(first.alongsideCpuMicros).map((name) => [
          name,
          sum((m) => m.alongsideCpuMicros![name]!),
        ]),
      ),
    }),
    ...(first.quota && {
      quota: {
        sent: sum((m) => m.quota!.sent),
        executed: sum((m) => m.quota!.executed),
        admitted: sum((m) => m.quota!.admitted),
      },
    }),
    stealPercent: weighted((m) => m.stealPercent),
    othersOnMeasuredCpuPercent:
      first.othersOnMeasuredCpuPercent === null
        ? null
        : Math.round(weighted((m) => m.othersOnMeasuredCpuPercent!)),
    retriedSlices,
  };
}

/**
 * Measures every target REPEATS times. Each run is SLICES slices, taken in rounds over all
 * targets, so that a slow spell of the machine hits every target of the repeat alike; a
 * disturbed slice is measured again (up to RETRIES times). The median is taken over the runs.
 */
export async function measureRepeatedly<Name extends string>(targets: Record<Name, Target>) {
  const names = Object.keys(targets) as Name[];
  const runs = Object.fromEntries(names.map((name) => [name, [] as Measurement[]])) as Record<
    Name,
    Measurement[]
  >;
  for (const name of names) await warmUp(targets[name]);
  for (let repeat = 0; repeat < REPEATS; repeat++) {
    const slices = Object.fromEntries(names.map((name) => [name, [] as Measurement[]]));
    const retried = Object.fromEntries(names.map((name) => [name, 0]));
    for (let round = 0; round < SLICES; round++) {
      for (const name of names) {
        const { slice, retried: again } = await measureSlice(targets[name]);
        slices[name]!.push(slice);
        retried[name]! += again;
      }
    }
    for (const name of names) runs[name].push(combine(slices[name]!, retried[name]!));
  }
  const results = Object.fromEntries(names.map((name) => [name, medianRun(runs[name])])) as Record<
    Name,
    Measurement
  >;
  return { runs, results };
}

export function table(rows: Record<string, LoadResult>): void {
  console.table(
    Object.fromEntries(
      Object.entries(rows).map(([name, r]) => [
        name,
        {
          'req/s': r.requestsPerSecond,
          'p50 ms': r.latencyP50Ms,
          'p99 ms': r.latencyP99Ms,
          non2xx: r.non2xx,
          errors: r.errors,
        },
      ]),
    ),
  );
}

/** The measured runs as one table, with warnings for runs whose figures do not mean much. */
export function report(
  title: string,
  results: Record<string, Measurement>,
  { saturation = true } = {},
): void {
  const where = layout
    ? `the measured server alone on CPU ${layout.measured}, the rest on CPU ${layout.others}`
    : 'nothing pinned (no taskset, or one CPU)';
  const generators = [...new Set(Object.values(results).map((r) => r.loadGenerator))].join(', ');
  console.log(
    `\n${title}\nMedian of ${REPEATS} runs by CPU per request, each run ${SLICES} slices of ` +
      `${SLICE_SECONDS} s taken in rounds over all targets (a slice with over ` +
      `${STEAL_WARNING} % steal or other work on the measured CPU measured again, up to ` +
      `${RETRIES} times); ${where}; load by ${generators}`,
  );
  console.table(
    Object.fromEntries(
      Object.entries(results).map(([name, r]) => [
        name,
        {
          'req/s': r.requestsPerSecond,
          'CPU µs/req': r.cpuMicrosPerRequest,
          'server CPU %': r.serverCpuPercent,
          'load gen CPU %': r.loadGeneratorCpuPercent,
          'p50 ms': r.latencyP50Ms,
          'p99 ms': r.latencyP99Ms,
          non2xx: r.non2xx,
          errors: r.errors,
          'steal %': r.stealPercent,
          'retried slices': r.retriedSlices ?? 0,
          'others on its CPU %': r.othersOnMeasuredCpuPercent ?? '-',
        },
      ]),
    ),
  );
  const below = Object.entries(results).filter(([, r]) => r.serverCpuPercent < SATURATED_PERCENT);
  if (saturation && below.length > 0) {
    console.log(
      `Not saturated (server CPU under ${SATURATED_PERCENT} %): ` +
        `${below.map(([name]) => name).join(', ')}. The limit was elsewhere: the load ` +
        `generator (its CPU %), a server the target waits for on CPU ${layout?.others ?? '0'} ` +
        `(catalog, Redis), or other processes of the machine on the measured CPU.`,
    );
  }
  const crowded = Object.entries(results).filter(
    ([, r]) => (r.othersOnMeasuredCpuPercent ?? 0) > OTHERS_WARNING,
  );
  if (crowded.length > 0) {
    console.log(
      `Warning: other work took over ${OTHERS_WARNING} % of the measured CPU during ` +
        `${crowded.map(([name]) => name).join(', ')}: the server did not have its CPU to ` +
        'itself, so its CPU per request and req/s are inflated and deflated; run again.',
    );
  }
  const disturbed = Object.entries(results).filter(([, r]) => r.stealPercent > STEAL_WARNING);
  if (disturbed.length > 0) {
    console.log(
      `Warning: the hypervisor took over ${STEAL_WARNING} % of the CPU during ` +
        `${disturbed.map(([name]) => name).join(', ')}: ` +
        'those figures are not comparable; run again.',
    );
  }
}
