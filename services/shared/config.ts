import { type Static, type TObject, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/** Settings every service reads. Each service extends this with its own. */
export const CommonConfigSchema = Type.Object({
  HOST: Type.String({ default: '0.0.0.0', description: 'Interface the HTTP server binds to' }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  LOG_PRETTY: Type.Boolean({ default: false, description: 'Human-readable logs (development)' }),
  INTERNAL_TOKEN: Type.String({
    minLength: 16,
    description: 'Shared secret the gateway presents to the catalog',
  }),
  MONGODB_URI: Type.Optional(Type.String({ minLength: 1 })),
  MONGODB_DB: Type.String({ default: 'tool_directory' }),
  DATA_DIR: Type.String({ default: './data' }),
  SHUTDOWN_DELAY_MS: Type.Integer({
    minimum: 0,
    default: 0,
    description: 'Time readiness fails before the server closes, so load balancers drain it',
  }),
});

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Reads a TypeBox-described configuration from environment variables: empty values count as
 * unset, defaults apply, strings convert to the declared types, and every problem is reported
 * at once so an operator fixes the environment in one go. `check` adds the problems of settings
 * taken together (as `NAME: problem`), which a schema of single values cannot express.
 */
export function loadConfig<T extends TObject>(
  schema: T,
  env: NodeJS.ProcessEnv = process.env,
  check: (config: Static<T>) => string[] = () => [],
): Static<T> {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(schema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  // TypeBox converts integers with parseInt, which reads "1e400" as 1 and "2.5" as 2: an
  // integer setting must be written in digits (checked on the text, which conversion replaces).
  const notDigits = Object.keys(raw)
    .filter(
      (key) => schema.properties[key]?.type === 'integer' && !/^-?\d+$/.test(raw[key] as string),
    )
    .map((key) => `${key}: Expected an integer written in digits`);
  const converted = Value.Convert(schema, Value.Default(schema, raw));
  const errors = [...Value.Errors(schema, converted)];
  const together = check(converted as Static<T>);
  if (errors.length > 0 || notDigits.length > 0 || together.length > 0) {
    const lines = [
      ...notDigits,
      ...errors.map((e) => `${e.path.slice(1) || '(config)'}: ${e.message}`),
      ...together,
    ];
    throw new ConfigError(`Invalid configuration:\n  ${[...new Set(lines)].join('\n  ')}`);
  }
  return converted as Static<T>;
}
