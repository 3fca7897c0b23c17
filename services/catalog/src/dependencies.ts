import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { StorageSpace } from '../../shared/embedded/storage-space';
import { createRegistry } from '../../shared/metrics';
import { type CatalogChangesWiring, openCatalogChanges } from './changes/open-catalog-changes';
import type { CatalogConfig } from './config';
import type { CatalogStore } from './store/catalog-store';
import { createStore } from './store/create-store';
import { instrumentStore } from './store/instrumented-store';
import { type Webhooks, openWebhooks } from './webhooks/open-webhooks';

/**
 * Everything the catalog app uses, built from configuration and started by nothing: server.ts
 * builds these, starts the watchers that keep them current (startWatchers) and builds the app.
 */
export interface CatalogDependencies {
  registry: Registry;
  /** The store, its calls timed into `registry`. */
  store: CatalogStore;
  /** The change feed, its Redis connection and the operator change service. */
  changes: CatalogChangesWiring;
  webhooks: Webhooks;
  /** Whether writes under DATA_DIR can succeed (a full disk), for readiness. */
  storage: StorageSpace;
  /** Closes what was built here; the watchers' stop function runs first. */
  close(): Promise<void>;
}

export async function createCatalogDependencies(
  config: CatalogConfig,
  { logger }: { logger: Logger },
): Promise<CatalogDependencies> {
  const registry = createRegistry('catalog');
  const store = instrumentStore(await createStore(config), registry);
  const changes = openCatalogChanges(config, store, logger);
  const webhooks = await openWebhooks(config, { redis: changes.redis, logger, registry });
  return {
    registry,
    store,
    changes,
    webhooks,
    storage: new StorageSpace(config.DATA_DIR),
    close: async () => {
      await webhooks.close();
      await changes.close();
      await store.close();
    },
  };
}
