import { type Static, Type } from '@sinclair/typebox';
import { CommonConfigSchema, loadConfig } from '../../shared/config';
import { RedisConfigSchema, redisProblems } from '../../shared/redis-config';

export const GatewayConfigSchema = Type.Composite([
  CommonConfigSchema,
  RedisConfigSchema,
  Type.Object({
    PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
    METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9464 }),
    CATALOG_URL: Type.String({ default: 'http://127.0.0.1:8081' }),
    UPSTREAM_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 5_000 }),
    PUBLIC_URL: Type.Optional(
      Type.String({ description: 'Public base URL; unset: http://localhost:<PORT>' }),
    ),
    CORS_ORIGINS: Type.String({
      default: '*',
      description: '"*" or a comma-separated list of origins',
    }),
    TRUST_PROXY: Type.String({
      default: 'false',
      description: '"false", "true", or comma-separated proxy addresses/CIDRs',
    }),
    REGISTRATIONS_PER_HOUR: Type.Integer({ minimum: 1, default: 10 }),
    INVALID_KEYS_PER_MINUTE: Type.Integer({
      minimum: 1,
      default: 30,
      description: 'Unknown API keys per client IP and minute before 429, without store lookups',
    }),
    SECRET_SCANNING_PUBLIC_KEYS: Type.Optional(
      Type.String({
        description:
          "A file of secret-scanning public keys (GitHub's format); unset: no leak-report endpoint",
      }),
    ),
    SEARCH_ANALYTICS: Type.Union([Type.Literal('on'), Type.Literal('off')], {
      default: 'on',
      description:
        "on: each key's searches (query, hit count, time) are counted for GET /v1/usage/searches and kept 30 days; off: none are kept",
    }),
    SEARCH_ANALYTICS_FLUSH_MS: Type.Integer({
      minimum: 100,
      maximum: 60_000,
      default: 5_000,
      description: 'How often each gateway writes the searches it counted, in one write',
    }),
    OAUTH_CLIENT_METADATA_ALLOW_PRIVATE: Type.Boolean({
      default: false,
      description:
        'Lets OAuth client ID metadata documents be fetched over http and from private addresses (development and tests only)',
    }),
    LEAK_REPORTS_PER_MINUTE: Type.Integer({
      minimum: 1,
      default: 60,
      description: 'Leak reports (POST /v1/keys/leaks) per client IP and minute before 429',
    }),
    KEY_MAX_LIFETIME_DAYS: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: 'No new secret (created or rolled) lives longer than this; unset: no cap',
      }),
    ),
    QUOTA_FREE: Type.Integer({ minimum: 1, default: 100 }),
    QUOTA_PRO: Type.Integer({ minimum: 1, default: 5_000 }),
    QUOTA_ENTERPRISE: Type.Integer({ minimum: 1, default: 50_000 }),
    RESPONSE_CACHE: Type.Union([Type.Literal('on'), Type.Literal('off')], {
      default: 'on',
      description: "The gateway's cache of the catalog's shared GET answers (X-Cache)",
    }),
    RESPONSE_CACHE_MAX_BYTES: Type.Integer({
      minimum: 0,
      default: 64 * 1024 * 1024,
      description: 'Bytes of answers the response cache holds at most, all entries together',
    }),
    KEY_CACHE_TTL_MS: Type.Integer({
      minimum: 100,
      default: 60_000,
      description: 'Safety net for the key cache; changes are pushed to every replica sooner',
    }),
  }),
]);

export type GatewayConfig = Static<typeof GatewayConfigSchema> & { PUBLIC_URL: string };

export function loadGatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const config = loadConfig(GatewayConfigSchema, env, redisProblems);
  // Unset: this gateway on this machine, on the port it actually listens on.
  return { ...config, PUBLIC_URL: config.PUBLIC_URL ?? `http://localhost:${config.PORT}` };
}

/** Fastify's `trustProxy` from TRUST_PROXY: a flag or the proxies' addresses and CIDRs. */
export function trustProxySetting(value: string): boolean | string[] {
  if (value === 'true') return true;
  if (value === 'false' || value === '') return false;
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export function quotasFrom(
  config: Pick<GatewayConfig, 'QUOTA_FREE' | 'QUOTA_PRO' | 'QUOTA_ENTERPRISE'>,
) {
  return { free: config.QUOTA_FREE, pro: config.QUOTA_PRO, enterprise: config.QUOTA_ENTERPRISE };
}
