import { type Static, Type } from '@sinclair/typebox';
import { CommonConfigSchema, loadConfig } from '../../shared/config';

export const CatalogConfigSchema = Type.Composite([
  CommonConfigSchema,
  Type.Object({
    CATALOG_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8081 }),
    METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9465 }),
    REDIS_URL: Type.Optional(
      Type.String({ minLength: 1, description: 'Redis for the change feed across replicas' }),
    ),
    SEARCH_ENGINE: Type.Union([Type.Literal('auto'), Type.Literal('atlas'), Type.Literal('text')], {
      default: 'auto',
      description:
        'MongoDB search: Atlas Search when the cluster has it (auto), always (atlas), or the $text index (text)',
    }),
    ADMIN_TOKEN: Type.Optional(
      Type.String({
        minLength: 16,
        description: 'Enables the admin endpoints (/admin/v1) with this bearer token',
      }),
    ),
  }),
]);

export type CatalogConfig = Static<typeof CatalogConfigSchema>;

export function loadCatalogConfig(env: NodeJS.ProcessEnv = process.env): CatalogConfig {
  return loadConfig(CatalogConfigSchema, env);
}
