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
 * Daily quotas per key (SPEC B4) with rate-limiter-flexible: one limiter per tier; on Redis
 * one atomic script call per admitted request, and none for a key that is already exhausted
 * (`inMemoryBlockOnConsumed` remembers it until midnight). If Redis is not ready the in-memory
 * insurance limiter answers, so a Redis outage never fails a request.
 */
export class QuotaLimiter {
  private readonly limiters: Record<Tier, RateLimiterAbstract>;
  private readonly windows = new DailyWindows();

  constructor(private readonly options: QuotaOptions) {
    const { quotas, redis, keyPrefix = 'quota' } = options;
    const build = (tier: Tier): RateLimiterAbstract => {
      const points = quotas[tier];
      // On Redis, one counter per key and day whatever the tier: re-tiering a key mid-day keeps
      // its count (SPEC B4: quotas are per key), and each tier's limiter compares it with its
      // own quota. In memory (no Redis) every limiter has its own store, so there a new tier
      // starts a new count.
      const common = { points, duration: 86_400, keyPrefix };
      if (!redis) return new RateLimiterMemory(common);
      return new RateLimiterRedis({
        ...common,
        storeClient: redis,
        rejectIfRedisNotReady: true,
        inMemoryBlockOnConsumed: points,
        insuranceLimiter: new InsuranceLimiter(common, () => options.onInsurance?.(tier)),
      });
    };
    this.limiters = { free: build('free'), pro: build('pro'), enterprise: build('enterprise') };
  }

  async consume(keyId: string, tier: Tier): Promise<QuotaDecision> {
    const window = this.windows.at(this.options.clock());
    let allowed = true;
    let remaining = 0;
    try {
      const res = await this.limiters[tier].consume(`${keyId}:${window.date}`, 1, {
        customDuration: window.secondsToReset,
      });
      remaining = res.remainingPoints;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) allowed = false;
      // Both Redis and the insurance limiter failed: serving beats failing (SPEC B4).
      else this.options.onFailure?.(rejection);
    }
    return {
      allowed,
      limit: this.options.quotas[tier],
      remaining,
      resetAt: window.resetAt,
      secondsToReset: window.secondsToReset,
    };
  }
}
