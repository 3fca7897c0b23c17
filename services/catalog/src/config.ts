import { type Static, Type } from '@sinclair/typebox';
import { CommonConfigSchema, loadConfig } from '../../shared/config';

export const CatalogConfigSchema = Type.Composite([
  CommonConfigSchema,
  Type.Object({
    CATALOG_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8081 }),
    METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9465 }),
  }),
]);

export type CatalogConfig = Static<typeof CatalogConfigSchema>;

export function loadCatalogConfig(env: NodeJS.ProcessEnv = process.env): CatalogConfig {
  return loadConfig(CatalogConfigSchema, env);
}
