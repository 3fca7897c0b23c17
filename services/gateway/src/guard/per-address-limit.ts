import type { onRequestAsyncHookHandler } from 'fastify';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import type { RedisClient } from '../../../shared/redis';
import { clientAddress } from '../plugins/client-address';

/**
 * Attempts per client address for a public route (registration, leak reports): shared by every
 * replica through Redis when there is one, counted in memory meanwhile or without it.
 */
export function addressLimiter(
  options: { points: number; duration: number; keyPrefix: string },
  redis: RedisClient | undefined,
): RateLimiterAbstract {
  return redis
    ? new RateLimiterRedis({
        ...options,
        storeClient: redis,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory(options),
      })
    : new RateLimiterMemory(options);
}

/**
 * An `onRequest` hook counting every attempt of the client's address before the body is read (so
 * malformed attempts count too); past the limit, `refusal` with `Retry-After`.
 */
export function limitPerAddress(
  attempts: RateLimiterAbstract,
  refusal: () => Error,
): onRequestAsyncHookHandler {
  return async (request, reply) => {
    try {
      await attempts.consume(clientAddress(request));
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      reply.header('retry-after', Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
      throw refusal();
    }
  };
}
