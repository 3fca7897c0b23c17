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
 * Daily quotas per key (SPEC B4) with rate-limiter-flexible. On Redis: one limiter per tier,
 * one atomic script call per admitted request, and none for a key that is already exhausted
 * (`inMemoryBlockOnConsumed` remembers it until midnight); if Redis is not ready the in-memory
 * insurance limiter answers, so a Redis outage never fails a request. Without Redis: one
 * in-process counter. Either way the count belongs to the key and the day, whatever the tier,
 * so a key re-tiered mid-day keeps what it has used.
 */
export class QuotaLimiter {
  /** On Redis: every tier's limiter counts the same per-key counter against its own quota. */
  private readonly limiters?: Record<Tier, RateLimiterAbstract>;
  /** Without Redis: one counter per key and day, compared with the tier's quota here. */
  private readonly counter?: RateLimiterMemory;
  private readonly windows = new DailyWindows();

  constructor(private readonly options: QuotaOptions) {
    const { quotas, redis, keyPrefix = 'quota' } = options;
    const duration = 86_400;
    if (!redis) {
      this.counter = new RateLimiterMemory({
        points: Number.MAX_SAFE_INTEGER,
        duration,
        keyPrefix,
      });
      return;
    }
    const build = (tier: Tier): RateLimiterAbstract => {
      const common = { points: quotas[tier], duration, keyPrefix };
      return new RateLimiterRedis({
        ...common,
        storeClient: redis,
        rejectIfRedisNotReady: true,
        inMemoryBlockOnConsumed: quotas[tier],
        insuranceLimiter: new InsuranceLimiter(common, () => options.onInsurance?.(tier)),
      });
    };
    this.limiters = { free: build('free'), pro: build('pro'), enterprise: build('enterprise') };
  }

  async consume(keyId: string, tier: Tier): Promise<QuotaDecision> {
    const window = this.windows.at(this.options.clock());
    const key = `${keyId}:${window.date}`;
    const options = { customDuration: window.secondsToReset };
    const limit = this.options.quotas[tier];
    let allowed = true;
    let remaining = 0;
    const { counter, limiters } = this;
    if (counter) {
      const { consumedPoints } = await counter.consume(key, 1, options);
      allowed = consumedPoints <= limit;
      // A refused request uses nothing (SPEC B4).
      if (allowed) remaining = limit - consumedPoints;
      else await counter.reward(key, 1, options);
    } else if (limiters) {
      try {
        remaining = (await limiters[tier].consume(key, 1, options)).remainingPoints;
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) {
          allowed = false;
          // A refusal that reached the store was counted there (the first after a downgrade,
          // or a race at the limit); a refused request uses nothing, so it is given back. Keys
          // already blocked in memory are refused without a count, and cost no call.
          if (rejection.consumedPoints > limit) {
            await limiters[tier].reward(key, 1, options).catch(() => undefined);
          }
        } else {
          // Both Redis and the insurance limiter failed: serving beats failing (SPEC B4).
          this.options.onFailure?.(rejection);
        }
      }
    }
    return {
      allowed,
      limit,
      remaining,
      resetAt: window.resetAt,
      secondsToReset: window.secondsToReset,
    };
  }
}
