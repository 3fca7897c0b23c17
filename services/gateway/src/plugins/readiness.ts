import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { healthPlugin } from '../../../shared/health';
import type { GatewayConfig } from '../config';
import type { GatewayDependencies } from '../dependencies';
import { watchCatalogReadiness } from '../proxy/catalog-readiness';

export interface ReadinessOptions {
  config: Pick<GatewayConfig, 'INTERNAL_TOKEN'>;
  deps: Pick<GatewayDependencies, 'catalog' | 'metrics' | 'keyStore' | 'storage' | 'quota'>;
}

/**
 * The gateway's `/healthz` and `/readyz`. Ready when keys can be checked, the catalog has been
 * ready since this gateway started and it takes this gateway's token (watchCatalogReadiness:
 * checked in the background, so /readyz never waits for the catalog). The reasons are the public
 * port's: no addresses in them. The catalog checks run while the app does: they stop when it
 * closes, before the dependencies they read are closed.
 */
export const readinessPlugin = fp<ReadinessOptions>(
  async function readiness(app: FastifyInstance, { config, deps }) {
    const catalogReadiness = watchCatalogReadiness({
      client: deps.catalog,
      internalToken: config.INTERNAL_TOKEN,
      logger: app.log,
      tokenRefused: deps.metrics.internalTokenRefused,
    });
    app.addHook('onClose', async () => catalogReadiness.stop());
    await app.register(healthPlugin, {
      ready: async () => {
        await deps.keyStore.ping().catch((err: unknown) => {
          throw new Error('the key store cannot be reached', { cause: err });
        });
        const catalogProblem = catalogReadiness.problem();
        if (catalogProblem !== undefined) throw new Error(catalogProblem);
      },
      writes: () => deps.storage.problem(),
      quotas: () => deps.quota.problem(),
    });
  },
  { name: 'gateway-readiness' },
);
