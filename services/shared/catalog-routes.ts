import type { Tier } from './tiers';

/** One public route of the catalog, as the gateway proxies it. */
export interface CatalogRoute {
  method: 'GET' | 'POST' | 'DELETE';
  /** The route template: metrics, logs and spans on both services carry it as `route`. */
  url: string;
  /** The lowest tier that may call it (SPEC A 2.7, B3); the gateway answers 403 below it. */
  tier: Tier;
  /** Largest request body the gateway accepts for it; bodiless routes take none. */
  bodyLimit?: number;
  /**
   * Its answers are the same for every key of a tier and carry the catalog version: the catalog
   * keeps them in its response cache, and the gateway in its own.
   */
  cacheable?: true;
}

const WEBHOOK_BODY_LIMIT = 16 * 1024;

/**
 * The gateway's view of the catalog's public routes: one table, from which the gateway builds
 * its proxy routes (method, template, body limit, tier check before the body is read). A test
 * holds the catalog to it: the catalog serves exactly these routes under /v1. Anything else
 * under /v1 goes through a catch-all and meets the catalog's 404.
 */
export const CATALOG_ROUTES: readonly CatalogRoute[] = [
  { method: 'GET', url: '/v1/tools', tier: 'free', cacheable: true },
  { method: 'GET', url: '/v1/tools/:slug', tier: 'free', cacheable: true },
  { method: 'GET', url: '/v1/categories', tier: 'free', cacheable: true },
  { method: 'GET', url: '/v1/search', tier: 'free', cacheable: true },
  { method: 'GET', url: '/v1/compare/:tool1/:tool2', tier: 'pro', cacheable: true },
  { method: 'GET', url: '/v1/export', tier: 'enterprise' },
  { method: 'POST', url: '/v1/webhooks', tier: 'enterprise', bodyLimit: WEBHOOK_BODY_LIMIT },
  { method: 'GET', url: '/v1/webhooks', tier: 'enterprise' },
  { method: 'GET', url: '/v1/webhooks/:id', tier: 'enterprise' },
  { method: 'DELETE', url: '/v1/webhooks/:id', tier: 'enterprise' },
  {
    method: 'POST',
    url: '/v1/webhooks/:id/test',
    tier: 'enterprise',
    bodyLimit: WEBHOOK_BODY_LIMIT,
  },
  { method: 'GET', url: '/v1/webhooks/:id/deliveries', tier: 'enterprise' },
];
