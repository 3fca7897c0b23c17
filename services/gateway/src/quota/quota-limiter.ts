import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { type RedisClient, answers, inOneWrite, onMastersChanged } from '../../../shared/redis';
import { TIERS, type Tier } from '../../../shared/tiers';
import { AdmittedToday } from './admitted-today';
import { type Clock, type DailyWindow, DailyWindows } from './daily-window';
import { RedisCircuit } from './redis-circuit';

export interface QuotaDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds of the next 00:00:00 UTC. */
  resetAt: number;
  secondsToReset: number;
}

export interface QuotaEvents {
  /** This replica decided alone because Redis could not answer. */
  onInsurance?: (tier: Tier) => void;
  /** A quota command to Redis failed or timed out. */
  onRedisError?: (err: unknown) => void;
  /** Redis stopped answering: quotas are kept per replica until it answers again. */
  onRedisDown?: (lastError: unknown) => void;
  /** Redis answers again: quotas are shared again. */
  onRedisBack?: () => void;
}

export interface QuotaOptions extends QuotaEvents {
  quotas: Record<Tier, number>;
  clock: Clock;
  /**
   * Redis for quotas shared by every replica (one server or a cluster, where each key's counter
   * is one key on one shard); without it quotas live in this process.
   */
  redis?: RedisClient;
  keyPrefix?: string;
}

const DAY_SECONDS = 86_400;

/**
 * Days of daily counts kept for the usage history (`GET /v1/usage`): a day's counter is the
 * quota's own, kept this long after its day instead of expiring at its end, so the history costs
 * no command of its own on an admitted request.
 */
export const HISTORY_DAYS = 30;

/** A day's count of a key, as `GET /v1/usage` lists it. */
export interface DailyUse {
  /** UTC date, `YYYY-MM-DD`. */
  date: string;
  used: number;
}

/**
 * Takes one unit of a key's count for the day if it is within its tier's quota, and returns the
 * key's count after it, or undefined for a refusal (which uses nothing,
 * docs/api.md#quotas-and-rate-limit-headers).
 */
type Take = (keyId: string, tier: Tier, window: DailyWindow) => Promise<number | undefined>;

/**
 * The units asked of one key's counter in one event-loop turn, each request waiting for its own.
 */
interface Asked {
  keyId: string;
  window: DailyWindow;
  waiting: ((count: number | undefined) => void)[];
}

/**
 * Daily quotas per key (docs/api.md#quotas-and-rate-limit-headers). Each replica remembers what it
 * admitted per key today; that count alone is the quota without Redis, and while Redis cannot
 * answer (the per-replica insurance quota). On Redis, rate-limiter-flexible makes one atomic script
 * call per key and event-loop turn: the n requests of a key read in one turn are counted by one
 * `INCRBY n`, whose result numbers them exactly (a hot key costs Redis one command a turn, not one
 * a request), and a key already exhausted costs none. The replica's own count is a floor under
 * Redis's, so a Redis that lost its counters never re-admits what this replica admitted. A circuit
 * breaker stops asking a Redis that fails or stalls. Either way the count belongs to the key and
 * the day, whatever the tier, so a key re-tiered mid-day keeps what it has used.
 */
export class QuotaLimiter {
  private readonly take: Take;
  private readonly windows = new DailyWindows();
  private readonly admitted: AdmittedToday;
  private readonly circuit: RedisCircuit | undefined;
  /** Today's and earlier days' counts of a key on Redis; undefined without Redis. */
  private readonly counted: ((keyId: string, dates: string[]) => Promise<number[]>) | undefined;

  constructor(private readonly options: QuotaOptions) {
    const { redis, keyPrefix = 'quota' } = options;
    // Without Redis this replica's own counts are the history too.
    this.admitted = new AdmittedToday(undefined, redis ? 1 : HISTORY_DAYS);
    if (redis) {
      this.circuit = new RedisCircuit({
        probe: () => answers(redis),
        onOpen: options.onRedisDown,
        onClose: options.onRedisBack,
      });
      this.take = this.onRedis(redis, this.circuit);
      // One GET a day (not MGET: on a cluster a key's days lie on several shards).
      this.counted = (keyId, dates) =>
        Promise.all(
          dates.map(async (date) =>
            Number(await redis.get(`${keyPrefix}:${counterKey(keyId, date)}`)),
          ),
        );
    } else {
      this.take = async (keyId, tier, window) => this.takeHere(keyId, tier, window.date);
    }
  }

  /** Decides on this replica's count alone. */
  private takeHere(keyId: string, tier: Tier, date: string): number | undefined {
    const count = this.admitted.of(keyId, date) + 1;
    if (count > this.options.quotas[tier]) return undefined;
    this.admitted.set(keyId, date, count);
    return count;
  }

  /** Every tier's limiter counts the same per-key counter against its own quota. */
  private onRedis(redis: RedisClient, circuit: RedisCircuit): Take {
    const { quotas, keyPrefix = 'quota', onInsurance, onRedisError } = this.options;
    const build = (tier: Tier) =>
      new RateLimiterRedis({
        points: quotas[tier],
        duration: DAY_SECONDS,
        keyPrefix,
        storeClient: redis,
        rejectIfRedisNotReady: true,
        inMemoryBlockOnConsumed: quotas[tier],
      });
    const limiters = { free: build('free'), pro: build('pro'), enterprise: build('enterprise') };
    // A reconnected Redis, or a cluster whose lost master was replaced, need not wait for the
    // end of the back-off.
    redis.on('ready', () => circuit.probeNow());
    onMastersChanged(redis, () => circuit.probeNow());

    const insured = (keyId: string, tier: Tier, date: string) => {
      onInsurance?.(tier);
      return this.takeHere(keyId, tier, date);
    };

    /**
     * One command for the units of a key asked in this turn. Redis's count C after `INCRBY n`
     * makes them units C-n+1 … C; the replica's own count a makes them at least a+1 … a+n. The
     * first that fit within the limit are admitted, the rest refused and given back in one call.
     */
    const count = async (key: string, tier: Tier, asked: Asked) => {
      const { keyId, window, waiting } = asked;
      const { date } = window;
      const limit = quotas[tier];
      const n = waiting.length;
      const options = { customDuration: window.secondsToReset + HISTORY_DAYS * DAY_SECONDS };
      let consumed: number;
      try {
        ({ consumedPoints: consumed } = await limiters[tier].consume(key, n, options));
        circuit.succeeded();
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) {
          // Serving beats failing (docs/api.md#quotas-and-rate-limit-headers): this replica decides
          // alone. Each request counts as a failure, as if it had sent its own command: the circuit
          // opens after as many.
          for (const answer of waiting) {
            circuit.failed(rejection);
            onRedisError?.(rejection);
            answer(insured(keyId, tier, date));
          }
          return;
        }
        // Keys already blocked in memory are refused without a count (consumedPoints 0), and
        // cost no call. A refusal that reached the store was counted there (the first after a
        // downgrade, or a race at the limit) and is numbered like an admission below.
        consumed = rejection.consumedPoints;
        if (consumed === 0) {
          for (const answer of waiting) answer(undefined);
          return;
        }
      }
      // Redis's count falls below this replica's own when Redis lost counters, or missed what
      // was admitted while it could not answer: the higher one counts.
      const own = this.admitted.of(keyId, date);
      const first = Math.max(consumed - n, own) + 1;
      const admitted = Math.min(n, Math.max(0, limit - first + 1));
      this.admitted.set(keyId, date, own + admitted);
      // A refused request uses nothing, so its unit is given back before it is answered.
      if (admitted < n) await giveBack(limiters[tier], key, n - admitted, options);
      for (let i = 0; i < n; i++) waiting[i]!(i < admitted ? first + i : undefined);
    };

    // The units asked per tier and counter key in this turn, sent at its end (check phase).
    const asked: Record<Tier, Map<string, Asked>> = {
      free: new Map(),
      pro: new Map(),
      enterprise: new Map(),
    };
    let sendScheduled = false;
    const send = () => {
      sendScheduled = false;
      inOneWrite(redis, () => {
        for (const tier of TIERS) {
          for (const [key, units] of asked[tier]) void count(key, tier, units);
          asked[tier].clear();
        }
      });
    };

    return (keyId, tier, window) => {
      const { date } = window;
      // Exhausted by this replica's own count: refused without a call, whatever Redis says.
      if (this.admitted.of(keyId, date) >= quotas[tier]) return Promise.resolve(undefined);
      if (circuit.open) return Promise.resolve(insured(keyId, tier, date));
      const key = counterKey(keyId, date);
      let units = asked[tier].get(key);
      if (units === undefined) {
        units = { keyId, window, waiting: [] };
        asked[tier].set(key, units);
        if (!sendScheduled) {
          sendScheduled = true;
          setImmediate(send);
        }
      }
      const { waiting } = units;
      return new Promise((resolve) => waiting.push(resolve));
    };
  }

  async consume(keyId: string, tier: Tier): Promise<QuotaDecision> {
    const window = this.windows.at(this.options.clock());
    const limit = this.options.quotas[tier];
    const count = await this.take(keyId, tier, window);
    return decision(count !== undefined, limit, count ?? limit, window);
  }

  /** Reads of a key's count under way, by key and date: a peek while one is shares it. */
  private readonly reading = new Map<string, Promise<number>>();

  /**
   * The key's quota as it stands, taking nothing: for requests that cost no unit (`GET /v1/usage`,
   * an MCP `tools/list`). One read of Redis, shared by the key's peeks while it is under way (an
   * agent's burst of list calls is one read, not one each); this replica's own count when Redis
   * cannot answer.
   */
  async peek(keyId: string, tier: Tier): Promise<QuotaDecision> {
    const window = this.windows.at(this.options.clock());
    const key = counterKey(keyId, window.date);
    let reading = this.reading.get(key);
    if (reading === undefined) {
      reading = this.used(keyId, [window.date]).then(([used]) => used!);
      this.reading.set(key, reading);
      const done = () => this.reading.delete(key);
      reading.then(done, done);
    }
    return decision(true, this.options.quotas[tier], await reading, window);
  }

  /**
   * The key's use on each of the last `days` UTC days, today first: the quota's own daily counts
   * (Redis's, or without Redis this replica's, kept HISTORY_DAYS days).
   */
  async history(keyId: string, days = HISTORY_DAYS): Promise<DailyUse[]> {
    const today = Date.parse(this.windows.at(this.options.clock()).date);
    const dates = Array.from({ length: days }, (_, i) =>
      new Date(today - i * DAY_SECONDS * 1000).toISOString().slice(0, 10),
    );
    const used = await this.used(keyId, dates);
    return dates.map((date, i) => ({ date, used: used[i]! }));
  }

  /** Counts per date: Redis's, never below this replica's own; its own alone without Redis. */
  private async used(keyId: string, dates: string[]): Promise<number[]> {
    const own = this.admitted.history(keyId, dates);
    if (this.counted === undefined || this.circuit!.open) return own;
    try {
      const counted = await this.counted(keyId, dates);
      this.circuit!.succeeded();
      return counted.map((count, i) => Math.max(count, own[i]!));
    } catch (err) {
      this.circuit!.failed(err);
      this.options.onRedisError?.(err);
      return own;
    }
  }

  /** Why quotas are not shared by every replica now, if they are not (for readiness). */
  problem(): string | undefined {
    return this.circuit?.open
      ? 'Redis does not answer: each replica counts quotas on its own until it does'
      : undefined;
  }

  /** Stops probing Redis. */
  close(): void {
    this.circuit?.stop();
  }
}

/** A key's counter name for a UTC date (the quota's key prefix goes in front). */
function counterKey(keyId: string, date: string): string {
  return `${keyId}:${date}`;
}

function decision(
  allowed: boolean,
  limit: number,
  used: number,
  window: DailyWindow,
): QuotaDecision {
  return {
    allowed,
    limit,
    remaining: Math.max(0, limit - used),
    resetAt: window.resetAt,
    secondsToReset: window.secondsToReset,
  };
}

/** Best effort: units that cannot be given back only make the key's count that much too high. */
async function giveBack(
  limiter: RateLimiterRedis,
  key: string,
  units: number,
  options: { customDuration: number },
): Promise<void> {
  await limiter.reward(key, units, options).catch(() => undefined);
}
