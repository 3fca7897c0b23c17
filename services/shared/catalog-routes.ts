/**
 * The catalog's public route templates. The gateway proxies each under its own name, so that
 * metrics, logs and spans on both services carry the same bounded `route` label; anything else
 * under /v1 goes through a catch-all (and meets the catalog's 404).
 */
export const CATALOG_ROUTES = [
  '/v1/tools',
  '/v1/tools/:slug',
  '/v1/categories',
  '/v1/search',
  '/v1/compare/:tool1/:tool2',
  '/v1/export',
] as const;
