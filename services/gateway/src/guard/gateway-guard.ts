import { type GatewayConfig, quotasFrom } from '../config';
import type { GatewayDependencies } from '../dependencies';
import { mcpResourceMetadataUrl } from '../oauth/authorization-server';
import { type ApiKeyGuard, createApiKeyGuard } from './api-key-guard';

/**
 * This gateway's API key guard, on its key cache, quotas and metrics. Every admitted request is
 * told to the quota warnings (80% of the day's quota) and noted as the key's last use.
 */
export function gatewayGuard(
  config: GatewayConfig,
  deps: Pick<
    GatewayDependencies,
    'keyCache' | 'unknownKeys' | 'quota' | 'metrics' | 'quotaWarnings' | 'lastUse' | 'oauth'
  >,
): ApiKeyGuard {
  return createApiKeyGuard({
    keys: deps.keyCache,
    unknownKeys: deps.unknownKeys,
    quota: deps.quota,
    quotas: quotasFrom(config),
    metrics: deps.metrics,
    portalUrl: `${config.PUBLIC_URL.replace(/\/$/, '')}/`,
    bearer: {
      tokens: deps.oauth.tokens,
      resourceMetadataUrl: mcpResourceMetadataUrl(config.PUBLIC_URL.replace(/\/$/, '')),
    },
    onAdmitted: (keyId, tier, decision) => {
      deps.quotaWarnings.observe(keyId, tier, decision);
      deps.lastUse.note(keyId);
    },
  });
}
