import { waitFor } from '../support/ports';
import { redisClusterStack } from '../support/redis-cluster-stack';
import { scanningProvider } from '../support/secret-scanning';

/**
 * Leak reports on a Redis Cluster (docs/security.md, "Leak reports"): a secret reported through
 * one gateway is refused by every gateway within a second, its announcement carried by the
 * cluster and its change read from the key store alike.
 */
describe('leak reports on a Redis Cluster', () => {
  const scanner = scanningProvider();
  const stack = redisClusterStack(
    { masters: 3 },
    { SECRET_SCANNING_PUBLIC_KEYS: scanner.publicKeysFile },
  );

  test('a signed report through one gateway ends the secret on both within a second', async () => {
    const { apiKey } = await stack.createKey('pro');
    for (const gateway of stack.gateways) expect(await stack.call(gateway, apiKey)).toBe(200);
    const report = scanner.report([apiKey]);
    const since = Date.now();
    const response = await fetch(`${stack.gateways[0]!.url}/v1/keys/leaks`, {
      method: 'POST',
      headers: report.headers,
      body: report.body,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual([
      { token_raw: apiKey, token_type: 'tool_directory_api_key', label: 'true_positive' },
    ]);
    for (const gateway of stack.gateways) {
      let lastMiss = since;
      await waitFor(
        async () => {
          const sentAt = Date.now();
          if ((await stack.call(gateway, apiKey)) === 401) return true;
          lastMiss = sentAt;
          return undefined;
        },
        { timeoutMs: 10_000, intervalMs: 20, what: `401 from ${gateway.url}` },
      );
      expect(lastMiss - since).toBeLessThan(1_000);
    }
  });

  test('an unsigned report changes nothing on any gateway', async () => {
    const { apiKey } = await stack.createKey('pro');
    const report = scanner.report([apiKey]);
    const response = await fetch(`${stack.gateways[1]!.url}/v1/keys/leaks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: report.body,
    });
    expect(response.status).toBe(401);
    for (const gateway of stack.gateways) expect(await stack.call(gateway, apiKey)).toBe(200);
  });
});
