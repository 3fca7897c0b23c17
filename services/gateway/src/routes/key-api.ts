import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { loadDatasetMeta } from '../../../catalog/src/records/dataset';
import { type GatewayConfig, quotasFrom } from '../config';
import type { GatewayDependencies } from '../dependencies';
import { keyRoutes } from './keys';
import { leakRoutes } from './leaks';
import { registerRoutes } from './register';
import { searchUsageRoutes } from './search-usage';
import { usageRoutes } from './usage';

export interface KeyApiOptions {
  config: GatewayConfig;
  deps: Pick<
    GatewayDependencies,
    | 'keyStore'
    | 'announceKeyChange'
    | 'quota'
    | 'lastUse'
    | 'scanningKeys'
    | 'redis'
    | 'searchRecorder'
  >;
}

/**
 * The gateway's own API about keys, answered here rather than by the catalog: usage, the calling
 * key's events and roll, leak reports and registration, in that order.
 */
export const keyApiRoutes: FastifyPluginAsyncTypebox<KeyApiOptions> = async (
  app,
  { config, deps },
) => {
  const quotas = quotasFrom(config);
  const { attribution } = loadDatasetMeta();
  const announce = deps.announceKeyChange;
  const maxLifetimeDays = config.KEY_MAX_LIFETIME_DAYS;
  await app.register(usageRoutes, {
    quota: deps.quota,
    quotas,
    attribution,
    lastUse: deps.lastUse,
  });
  await app.register(searchUsageRoutes, {
    store: deps.keyStore.searches,
    recorder: deps.searchRecorder,
    attribution,
  });
  await app.register(keyRoutes, { store: deps.keyStore, announce, maxLifetimeDays, attribution });
  await app.register(leakRoutes, {
    store: deps.keyStore,
    scanningKeys: deps.scanningKeys,
    attemptsPerMinute: config.LEAK_REPORTS_PER_MINUTE,
    redis: deps.redis,
    announce,
  });
  await app.register(registerRoutes, {
    store: deps.keyStore,
    freeQuota: quotas.free,
    attemptsPerHour: config.REGISTRATIONS_PER_HOUR,
    redis: deps.redis,
    announce,
    maxLifetimeDays,
  });
};
