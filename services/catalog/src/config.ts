import { type Static, Type } from '@sinclair/typebox';
import { CommonConfigSchema, loadConfig } from '../../shared/config';
import { RedisConfigSchema, redisProblems } from '../../shared/redis-config';
import { DEFAULT_RETRY_SCHEDULE, RETRY_SCHEDULE_PATTERN } from './webhooks/retry-schedule';

export const DEFAULT_CHANGES_RETENTION_DAYS = 30;

export const CatalogConfigSchema = Type.Composite([
  CommonConfigSchema,
  RedisConfigSchema,
  Type.Object({
    CATALOG_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8081 }),
    METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9465 }),
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
    CHANGES_RETENTION_DAYS: Type.Number({
      exclusiveMinimum: 0,
      maximum: 3650,
      default: DEFAULT_CHANGES_RETENTION_DAYS,
      description:
        'Days the change log (GET /v1/changes) keeps each change; an older cursor gets 410. Fractions are allowed',
    }),
    WEBHOOK_WORKER: Type.Union(
      ['on', 'off', 'only'].map((mode) => Type.Literal(mode)),
      {
        default: 'on',
        description:
          'on: this process serves the API and delivers webhooks; off: the API only; only: webhooks only (its own Deployment)',
      },
    ),
    WEBHOOK_ALLOW_PRIVATE: Type.Boolean({
      default: false,
      description:
        'Lets webhooks use http and reach loopback, private and link-local addresses (development only)',
    }),
    WEBHOOK_TIMEOUT_MS: Type.Integer({
      minimum: 1,
      default: 10_000,
      description:
        'A webhook delivery succeeds on a 2xx answered within this time (docs/api.md#webhook-events-and-deliveries)',
    }),
    WEBHOOK_RETRY_SCHEDULE: Type.String({
      pattern: RETRY_SCHEDULE_PATTERN,
      default: DEFAULT_RETRY_SCHEDULE,
      description: 'Waits before each webhook retry, comma-separated (e.g. 5s,5m,2h)',
    }),
  }),
]);

export type CatalogConfig = Static<typeof CatalogConfigSchema>;

export function loadCatalogConfig(env: NodeJS.ProcessEnv = process.env): CatalogConfig {
  return loadConfig(CatalogConfigSchema, env, redisProblems);
}
