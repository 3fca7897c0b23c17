import { RedisServer } from './redis-server';
import { startStack } from './services';

type Stack = Awaited<ReturnType<typeof startStack>>;

/**
 * A catalog and a gateway on a Redis of their own, for the tests that stop, stall or empty
 * that Redis; started before the suite's tests and stopped after them.
 */
export function redisStack(gatewayEnv: Record<string, string> = {}) {
  const fixture = {
    redis: undefined as unknown as RedisServer,
    stack: undefined as unknown as Stack,
    /** A keyed request, its body read. */
    async call(key: string): Promise<Response> {
      const response = await fetch(`${fixture.stack.gateway.url}/v1/tools?limit=1`, {
        headers: { 'x-api-key': key },
      });
      await response.arrayBuffer();
      return response;
    },
    /** `gateway_quota_insurance_active`: 1 while quotas are kept in memory. */
    async insuranceGauge(): Promise<number> {
      const metrics = await fixture.stack.gateway.metrics();
      return Number(metrics.match(/^gateway_quota_insurance_active\{[^}]*\} (\d+)/m)?.[1]);
    },
  };
  beforeAll(async () => {
    fixture.redis = await RedisServer.start();
    fixture.stack = await startStack({ REDIS_URL: fixture.redis.url, ...gatewayEnv });
  });
  afterAll(async () => {
    // A stalled server would otherwise keep its clients waiting.
    fixture.redis.signal('SIGCONT');
    await fixture.stack.stop();
    await fixture.redis.stop();
  });
  return fixture;
}
