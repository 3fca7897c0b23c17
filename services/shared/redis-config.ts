import { type Static, Type } from '@sinclair/typebox';

/**
 * How a deployment names its Redis, the same for the gateway, the catalog, the webhook worker and
 * the CLIs (docs/deploy.md#naming-redis). At most one of REDIS_URL, REDIS_CLUSTER_NODES and
 * REDIS_SENTINELS; none: no Redis (quotas in memory, the local change feed, the embedded queue).
 */
export const RedisConfigSchema = Type.Object({
  REDIS_URL: Type.Optional(
    Type.String({ minLength: 1, description: 'One Redis: a redis:// or rediss:// URL' }),
  ),
  REDIS_CLUSTER_NODES: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'Redis Cluster: some of its nodes as host:port, comma-separated (e.g. a managed service’s configuration endpoint); the others are discovered',
    }),
  ),
  REDIS_SENTINELS: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'Redis Sentinel: the sentinels as host:port, comma-separated',
    }),
  ),
  REDIS_SENTINEL_MASTER: Type.String({
    default: 'mymaster',
    description: 'The master group the sentinels watch',
  }),
  REDIS_SENTINEL_PASSWORD: Type.Optional(
    Type.String({ minLength: 1, description: 'Password of the sentinels, when they have one' }),
  ),
  REDIS_USERNAME: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'ACL user (Redis 6+); with REDIS_URL, one in the URL wins',
    }),
  ),
  REDIS_PASSWORD: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'Password of every node; with REDIS_URL, one in the URL wins',
    }),
  ),
  REDIS_TLS: Type.Boolean({
    default: false,
    description: 'TLS to every node (and sentinel); with REDIS_URL, rediss:// says so',
  }),
  REDIS_TLS_SERVERNAME: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'The name every server’s certificate is checked against, when the cluster gives its nodes as addresses (Azure Cache for Redis: the cache’s host name)',
    }),
  ),
  REDIS_TLS_CA_FILE: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'PEM file of the CA that signed the servers’ certificates (else the system’s)',
    }),
  ),
});

export type RedisSettings = Partial<Static<typeof RedisConfigSchema>>;

/** The settings' names, for a CLI that picks them from a service's schema. */
export const REDIS_SETTINGS = Object.keys(RedisConfigSchema.properties) as Array<
  keyof Static<typeof RedisConfigSchema>
>;

export interface NodeAddress {
  host: string;
  port: number;
}

/** Where Redis is, parsed and checked. */
export type RedisTarget =
  | { mode: 'single'; url: string }
  | { mode: 'cluster'; nodes: NodeAddress[] }
  | { mode: 'sentinel'; sentinels: NodeAddress[]; master: string };

export type RedisMode = RedisTarget['mode'];

/** `host:port`, `[v6address]:port`, or a bare host (the default port). */
function parseAddress(entry: string, defaultPort: number): NodeAddress | undefined {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(entry);
  if (!match) return undefined;
  const port = match[3] === undefined ? defaultPort : Number(match[3]);
  if (port < 1 || port > 65_535) return undefined;
  return { host: (match[1] ?? match[2])!, port };
}

function parseAddresses(
  name: string,
  value: string,
  defaultPort: number,
): { addresses: NodeAddress[]; problems: string[] } {
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  const addresses: NodeAddress[] = [];
  const problems: string[] = [];
  for (const entry of entries) {
    const address = parseAddress(entry, defaultPort);
    if (address) addresses.push(address);
    else problems.push(`${name}: '${entry}' is not host:port`);
  }
  if (entries.length === 0) problems.push(`${name}: Expected at least one host:port`);
  return { addresses, problems };
}

/**
 * The Redis the settings name, or undefined for none; `problems` lists what is wrong with them
 * (empty when nothing is), for the configuration's error message.
 */
export function redisTarget(settings: RedisSettings): {
  target: RedisTarget | undefined;
  problems: string[];
} {
  const given = (['REDIS_URL', 'REDIS_CLUSTER_NODES', 'REDIS_SENTINELS'] as const).filter(
    (name) => settings[name] !== undefined,
  );
  if (given.length > 1) {
    return {
      target: undefined,
      problems: [`${given.join(', ')}: Set one of them: they name different kinds of Redis`],
    };
  }
  if (settings.REDIS_URL !== undefined) {
    return { target: { mode: 'single', url: settings.REDIS_URL }, problems: [] };
  }
  if (settings.REDIS_CLUSTER_NODES !== undefined) {
    const { addresses, problems } = parseAddresses(
      'REDIS_CLUSTER_NODES',
      settings.REDIS_CLUSTER_NODES,
      6379,
    );
    return { target: { mode: 'cluster', nodes: addresses }, problems };
  }
  if (settings.REDIS_SENTINELS !== undefined) {
    const { addresses, problems } = parseAddresses(
      'REDIS_SENTINELS',
      settings.REDIS_SENTINELS,
      26379,
    );
    const master = settings.REDIS_SENTINEL_MASTER ?? 'mymaster';
    return { target: { mode: 'sentinel', sentinels: addresses, master }, problems };
  }
  return { target: undefined, problems: [] };
}

/** For loadConfig: what is wrong with the Redis settings taken together. */
export function redisProblems(settings: RedisSettings): string[] {
  return redisTarget(settings).problems;
}
