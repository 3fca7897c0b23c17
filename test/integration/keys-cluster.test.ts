import { PROPAGATION_MS, within } from '../support/waits';
import { waitFor } from '../support/ports';
import { redisClusterStack } from '../support/redis-cluster-stack';
import { scanningProvider } from '../support/secret-scanning';
import { keysCli } from '../support/services';

/**
 * The lifecycle and restrictions of keys on a Redis Cluster (docs/security.md): a secret reported
 * leaked, a key restricted or ended through one gateway or the CLI is refused by every gateway
 * within a second, its announcement carried by the cluster and its change read from the key store
 * alike.
 */
describe('keys on a Redis Cluster', () => {
  const scanner = scanningProvider();
  const stack = redisClusterStack(
    { masters: 3 },
    { SECRET_SCANNING_PUBLIC_KEYS: scanner.publicKeysFile },
  );

  /** Every gateway answers `expected` for `key` within a second of `since`. */
  async function everyGateway(key: string, expected: number, since: number) {
    for (const gateway of stack.gateways) {
      let lastMiss = since;
      await waitFor(
        async () => {
          const sentAt = Date.now();
          if ((await stack.call(gateway, key)) === expected) return true;
          lastMiss = sentAt;
          return undefined;
        },
        { timeoutMs: 10_000, intervalMs: 20, what: `${expected} from ${gateway.url}` },
      );
      expect(lastMiss - since).toBeLessThan(1_000);
    }
  }

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
    await everyGateway(apiKey, 401, since);
  });

  test('a restriction and an end set by an operator reach both gateways within a second', async () => {
    const { apiKey } = await stack.createKey('pro');
    for (const gateway of stack.gateways) expect(await stack.call(gateway, apiKey)).toBe(200);
    // From the CLI's exit, as below: its own start is not the time the change takes to spread.
    await keysCli(['update', apiKey, '--allow-ips', '192.0.2.0/24'], stack.storeEnv);
    let since = Date.now();
    await everyGateway(apiKey, 403, since);
    await keysCli(['update', apiKey, '--allow-ips', 'none'], stack.storeEnv);
    // Far enough ahead for two CLI runs and every gateway to learn it first, on a busy machine.
    const end = Date.now() + within(2 * PROPAGATION_MS);
    await keysCli(['update', apiKey, '--expires-at', new Date(end).toISOString()], stack.storeEnv);
    since = Date.now();
    await everyGateway(apiKey, 200, since);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, end - Date.now())));
    await everyGateway(apiKey, 401, end);
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
