import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { type RedisClient, keyPerShard } from '../../../shared/redis';
import type { LostCountersEvidence } from '../observability/metrics';
import type { Clock } from './daily-window';

/** How often each gateway looks for today's marker. */
export const MARKER_CHECK_MS = 30_000;
/** A marker outlives its day by a day, so one day's check never meets yesterday's absence. */
const MARKER_TTL_S = 2 * 86_400;
const DAY_MS = 86_400_000;

/**
 * The key that says the gateways have counted quotas on this Redis on `date` (UTC). On a cluster
 * there is one per shard (`quota-marker:<date>:{<tag>}`), since a shard loses its counters alone.
 */
export function quotaMarkerKey(date: string): string {
  return `quota-marker:${date}`;
}

export interface LostCountersOptions {
  clock: Clock;
  logger: Pick<Logger, 'warn' | 'error'>;
  onLost: (evidence: LostCountersEvidence) => void;
  checkMs?: number;
}

/**
 * A cheap guard against a Redis that lost its quota counters (restarted without persistence,
 * a failover to an empty replica, evicted): every gateway keeps a marker key for the day (one per
 * shard of a cluster), set if missing every 30 s and whenever the connection is ready. A marker
 * that vanished, or that is missing well into the day, means the day's counts are gone (on that
 * shard): each gateway then counts from what it admitted itself (the quota's per-replica floor),
 * and clients may be admitted again up to their quota. It only tells, in a log line and a metric
 * that an alert follows; it never touches a request (docs/deploy.md, "Redis for quotas"). Returns
 * a function that stops watching.
 */
export function watchForLostCounters(
  redis: RedisClient,
  { clock, logger, onLost, checkMs = MARKER_CHECK_MS }: LostCountersOptions,
): () => void {
  /** What this gateway writes into the markers it sets, to know them again. */
  const token = randomUUID();
  /** The markers of `date` that this gateway has seen or set. */
  let date = '';
  let seen = new Set<string>();
  let checkedBefore = false;
  const check = async () => {
    const now = clock();
    const today = new Date(now).toISOString().slice(0, 10);
    const markers = keyPerShard(redis, quotaMarkerKey(today));
    // A cluster whose map is not known yet has no shards to look at.
    if (markers.length === 0) return;
    let created: string[];
    try {
      const set = await Promise.all(
        markers.map((key) => redis.set(key, token, 'EX', MARKER_TTL_S, 'NX')),
      );
      // A marker first found holding this gateway's token was set by one of its own looks whose
      // reply was lost (the connection dropped after Redis had answered): it was missing then.
      const found = markers.filter((key, i) => set[i] !== 'OK' && !seen.has(key));
      const holders = await Promise.all(found.map((key) => redis.get(key)));
      created = [
        ...markers.filter((_, i) => set[i] === 'OK'),
        ...found.filter((_, i) => holders[i] === token),
      ];
    } catch {
      // Redis not answering: the quota says so already (insurance mode).
      return;
    }
    if (today !== date) {
      date = today;
      seen = new Set();
    }
    const vanished = created.filter((key) => seen.has(key));
    const intoDay = now % DAY_MS;
    if (vanished.length > 0) report('marker_vanished', vanished, markers.length);
    else if (created.length > 0 && !checkedBefore && intoDay > 2 * checkMs) {
      report('marker_missing', created, markers.length);
    }
    for (const key of markers) seen.add(key);
    checkedBefore = true;
  };
  const report = (evidence: LostCountersEvidence, lost: string[], shards: number) => {
    onLost(evidence);
    const message =
      evidence === 'marker_vanished'
        ? "Redis lost today's quota counters (its marker vanished): keys may be admitted again up to their quota; each replica still refuses what it admitted itself"
        : "Redis holds no quota marker for today although the day is under way: it lost today's counters, unless no gateway ran today before this one";
    const where = shards > 1 ? { shards: `${lost.length} of ${shards}`, markers: lost } : {};
    (evidence === 'marker_vanished' ? logger.error : logger.warn).call(
      logger,
      { evidence, ...where },
      message,
    );
  };
  const onReady = () => void check();
  redis.on('ready', onReady);
  if (redis.status === 'ready') void check();
  const timer = setInterval(() => void check(), checkMs).unref();
  return () => {
    clearInterval(timer);
    redis.off('ready', onReady);
  };
}
