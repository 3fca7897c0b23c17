import { type ClusterOptions, RedisCluster } from './redis-cluster';
import { ServiceProcess, keysCli, tempDataDir } from './services';

export interface CreatedKey {
  apiKey: string;
  keyId: string;
}

/**
 * A Redis Cluster, a catalog and two gateway processes on it (sharing one key store, as two
 * replicas share MongoDB), started before the suite's tests and stopped after them; keys are made
 * with the keys CLI on the same cluster.
 */
export function redisClusterStack(
  clusterOptions: ClusterOptions,
  gatewayEnv: Record<string, string> = {},
) {
  const fixture = {
    cluster: undefined as unknown as RedisCluster,
    catalog: undefined as unknown as ServiceProcess,
    gateways: [] as ServiceProcess[],
    /** What the CLIs and the gateways are given: the key store and the cluster. */
    storeEnv: {} as Record<string, string>,
    async createKey(tier: string): Promise<CreatedKey> {
      const email = `${tier}-${Date.now()}-${Math.random()}@example.com`;
      const args = ['create', '--tier', tier, '--email', email, '--name', 'Cluster'];
      return (await keysCli(args, fixture.storeEnv)) as CreatedKey;
    },
    /** A keyed read through a gateway: its status, the body read. */
    async call(gateway: ServiceProcess, key: string): Promise<number> {
      const response = await fetch(`${gateway.url}/v1/tools?limit=1`, {
        headers: { 'x-api-key': key },
      });
      await response.arrayBuffer();
      return response.status;
    },
  };
  beforeAll(async () => {
    fixture.cluster = await RedisCluster.start(clusterOptions);
    const { env } = fixture.cluster;
    fixture.storeEnv = { DATA_DIR: tempDataDir(), ...env };
    fixture.catalog = await ServiceProcess.start('catalog', { ...env, DATA_DIR: tempDataDir() });
    for (let i = 0; i < 2; i++) {
      fixture.gateways.push(
        await ServiceProcess.start('gateway', {
          CATALOG_URL: fixture.catalog.url,
          REGISTRATIONS_PER_HOUR: '1000',
          ...gatewayEnv,
          ...fixture.storeEnv,
        }),
      );
    }
  }, 90_000);
  afterAll(async () => {
    await Promise.all([...fixture.gateways.map((g) => g.stop()), fixture.catalog?.stop()]);
    await fixture.cluster?.stop();
  });
  return fixture;
}
