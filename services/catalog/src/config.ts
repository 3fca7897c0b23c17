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
    ADMIN_TOKEN: Type.Optional(
      Type.String({
        minLength: 16,
        description: 'Enables the admin endpoints (/admin/v1) with this bearer token',
      }),
    ),
    WEBHOOK_ALLOW_PRIVATE: Type.Boolean({
      default: false,
      description:
        'Lets webhooks use http and reach loopback, private and link-local addresses (development only)',
    }),
  }),
]);

export type CatalogConfig = Static<typeof CatalogConfigSchema>;

export function loadCatalogConfig(env: NodeJS.ProcessEnv = process.env): CatalogConfig {
  return loadConfig(CatalogConfigSchema, env);
}
