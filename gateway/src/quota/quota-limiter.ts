import type { Redis } from 'ioredis';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import type { Tier } from '../../../services/shared/tiers';
import { type Clock, DailyWindows } from './daily-window';

export interface QuotaDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds of the next 00:00:00 UTC. */
  resetAt: number;
  secondsToReset: number;
}

export interface QuotaEvents {
  /** The in-memory insurance limiter answered because Redis could not. */
  onInsurance?: (tier: Tier) => void;
  /** Redis failed and no limiter could answer; the request was let through. */
  onFailure?: (err: unknown) => void;
}

export interface QuotaOptions extends QuotaEvents {
  quotas: Record<Tier, number>;
  clock: Clock;
  /** Redis for quotas shared by every replica; without it quotas live in this process. */
  redis?: Redis;
  keyPrefix?: string;
}

const DAY_SECONDS = 86_400;

interface TakeOptions {
  /** Seconds to the end of the UTC day: the counter's time to live. */
  customDuration: number;
}

interface Taken {
  allowed: boolean;
  remaining: number;
}

/** Counts the requests that the per-replica insurance limiter answers while Redis is down. */
class InsuranceLimiter extends RateLimiterMemory {
  constructor(
    opts: ConstructorParameters<typeof RateLimiterMemory>[0],
    private readonly notify: () => void,
  ) {
    super(opts);
  }

  override consume(...args: Parameters<RateLimiterMemory['consume']>) {
    this.notify();
    return super.consume(...args);
  }
}

/**
 * Daily quotas per key (SPEC B4) with rate-limiter-flexible. On Redis: one limiter per tier,
 * one atomic script call per admitted request, and none for a key that is already exhausted
 * (`inMemoryBlockOnConsumed` remembers it until midnight); if Redis is not ready the in-memory
 * insurance limiter answers, so a Redis outage never fails a request. Without Redis: one
 * in-process counter. Either way the count belongs to the key and the day, whatever the tier,
 * so a key re-tiered mid-day keeps what it has used.
 */
export class QuotaLimiter {
  /** Takes one unit of a key's count for the day and says whether it was within `limit`. */
  private readonly take: (key: string, tier: Tier, options: TakeOptions) => Promise<Taken>;
  private readonly windows = new DailyWindows();

  constructor(private readonly options: QuotaOptions) {
    this.take = options.redis ? this.onRedis(options.redis) : this.inMemory();
  }

  /** One counter per key and day, compared with the tier's quota here. */
  private inMemory() {
    const { quotas, keyPrefix = 'quota' } = this.options;
    const counter = new RateLimiterMemory({
      points: Number.MAX_SAFE_INTEGER,
      duration: DAY_SECONDS,
      keyPrefix,
    });
    return async (key: string, tier: Tier, options: TakeOptions): Promise<Taken> => {
      const limit = quotas[tier];
      const { consumedPoints } = await counter.consume(key, 1, options);
      if (consumedPoints <= limit) return { allowed: true, remaining: limit - consumedPoints };
      // A refused request uses nothing (SPEC B4).
      await counter.reward(key, 1, options);
      return { allowed: false, remaining: 0 };
    };
  }

  /** Every tier's limiter counts the same per-key counter against its own quota. */
  private onRedis(redis: Redis) {
    const { quotas, keyPrefix = 'quota', onInsurance, onFailure } = this.options;
    const build = (tier: Tier): RateLimiterAbstract => {
      const common = { points: quotas[tier], duration: DAY_SECONDS, keyPrefix };
      return new RateLimiterRedis({
        ...common,
        storeClient: redis,
        rejectIfRedisNotReady: true,
        inMemoryBlockOnConsumed: quotas[tier],
        insuranceLimiter: new InsuranceLimiter(common, () => onInsurance?.(tier)),
      });
    };
    const limiters = { free: build('free'), pro: build('pro'), enterprise: build('enterprise') };
    return async (key: string, tier: Tier, options: TakeOptions): Promise<Taken> => {
      try {
        const { remainingPoints } = await limiters[tier].consume(key, 1, options);
        return { allowed: true, remaining: remainingPoints };
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) {
          // Both Redis and the insurance limiter failed: serving beats failing (SPEC B4).
          onFailure?.(rejection);
          return { allowed: true, remaining: 0 };
        }
        // A refusal that reached the store was counted there (the first after a downgrade, or
        // a race at the limit); a refused request uses nothing, so it is given back. Keys
        // already blocked in memory are refused without a count, and cost no call.
        if (rejection.consumedPoints > quotas[tier]) {
          await limiters[tier].reward(key, 1, options).catch(() => undefined);
        }
        return { allowed: false, remaining: 0 };
      }
    };
  }

  async consume(keyId: string, tier: Tier): Promise<QuotaDecision> {
    const window = this.windows.at(this.options.clock());
    const { allowed, remaining } = await this.take(`${keyId}:${window.date}`, tier, {
      customDuration: window.secondsToReset,
    });
    return {
      allowed,
      limit: this.options.quotas[tier],
      remaining,
      resetAt: window.resetAt,
      secondsToReset: window.secondsToReset,
    };
  }
}
