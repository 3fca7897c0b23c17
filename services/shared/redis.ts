import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import {
  Cluster,
  type ClusterOptions,
  Command,
  Redis,
  type RedisOptions as IORedisOptions,
} from 'ioredis';
import type { Logger } from 'pino';
import { ConfigError } from './config';
import { LogThrottle } from './log-throttle';
import {
  type NodeAddress,
  type RedisMode,
  type RedisSettings,
  type RedisTarget,
  redisTarget,
} from './redis-config';

/**
 * A connection to the deployment's Redis, whichever kind it is: one server (also behind
 * Sentinel) or a Redis Cluster. Modules use the commands both have; the few things that differ
 * (the nodes to ask, a key per shard, a batched write) are the functions of this module.
 */
export type RedisClient = Redis | Cluster;

/** The longest a connection attempt waits for Redis to accept it. */
const CONNECT_TIMEOUT_MS = 2_000;

/** The longest a command waits for Redis's reply before it fails (then decided in memory). */
export const COMMAND_TIMEOUT_MS = 500;

export interface RedisOptions {
  /**
   * A subscriber must queue its SUBSCRIBE until connected, and a CLI its one PUBLISH; the
   * gateway's quota connection never queues (it decides in memory instead).
   */
  queueWhileDisconnected?: boolean;
  /**
   * For a connection on the path of every request (the quota's): instead of a timer per
   * command, ioredis's `socketTimeout` drops the connection when no reply has come for
   * COMMAND_TIMEOUT_MS while commands wait, which fails them all at once; none is sent again
   * (`maxRetriesPerRequest: 0`), and ioredis connects again in the background. A timer per
   * command is a cost on every request (docs/performance.md#current-figures). On a cluster,
   * a command to a shard that is failing over fails at once too, instead of being sent again
   * every 100 ms for up to 1.6 s.
   */
  hotPath?: boolean;
  /**
   * BullMQ's connections, whose commands take as long as they take (a worker's wait for a job
   * blocks): no command timeout. `worker`: a command waits for Redis however long it is away,
   * as BullMQ requires of a worker's connection.
   */
  bullmq?: 'queue' | 'worker';
  /**
   * A command-line run's connection, which sends a PUBLISH or two and exits: made by its first
   * command (a run that announces nothing never connects), which waits in the queue meanwhile;
   * tried once, never again (the run is over before a retry would help); and closed at once by
   * `disconnect()`, where ioredis would let the socket hold the process up to 2 s: the whole
   * 2 s when the socket is already gone (a refused connection) or the server never closes it
   * (a stalled server).
   */
  commandLine?: boolean;
}

/** Makes the connections of one deployment's Redis, from its settings. */
export interface RedisConnector {
  readonly mode: RedisMode;
  connect(name: string, options?: RedisOptions): RedisClient;
}

/**
 * The one way every process makes its Redis clients: from the settings (REDIS_URL,
 * REDIS_CLUSTER_NODES or REDIS_SENTINELS, and the credentials and TLS that go with them), or
 * undefined when they name no Redis. Bad settings throw a ConfigError naming them.
 */
export function redisConnector(settings: RedisSettings): RedisConnector | undefined {
  const { target, problems } = redisTarget(settings);
  if (problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  if (!target) return undefined;
  const access = accessOptions(settings);
  return {
    mode: target.mode,
    connect: (name, options) => createRedis(target, name, options, access),
  };
}

/** Credentials and TLS for every node (and sentinel). */
interface Access {
  username?: string;
  password?: string;
  tls?: ConnectionOptions;
  sentinelPassword?: string;
}

function accessOptions(settings: RedisSettings): Access {
  let tls: ConnectionOptions | undefined;
  const wantsTls = settings.REDIS_TLS === true || settings.REDIS_URL?.startsWith('rediss:');
  if (wantsTls || settings.REDIS_TLS_CA_FILE !== undefined) {
    tls = {
      ...(settings.REDIS_TLS_SERVERNAME !== undefined && {
        servername: settings.REDIS_TLS_SERVERNAME,
      }),
    };
    if (settings.REDIS_TLS_CA_FILE !== undefined) {
      try {
        tls.ca = readFileSync(settings.REDIS_TLS_CA_FILE);
      } catch (err) {
        throw new ConfigError(
          `Invalid configuration:\n  REDIS_TLS_CA_FILE: cannot be read (${(err as Error).message})`,
        );
      }
    }
  }
  return {
    ...(settings.REDIS_USERNAME !== undefined && { username: settings.REDIS_USERNAME }),
    ...(settings.REDIS_PASSWORD !== undefined && { password: settings.REDIS_PASSWORD }),
    ...(settings.REDIS_SENTINEL_PASSWORD !== undefined && {
      sentinelPassword: settings.REDIS_SENTINEL_PASSWORD,
    }),
    ...(tls && { tls }),
  };
}

/** Retries of a lost connection: soon at first, then every 2 s, forever. */
const reconnectDelay = (attempt: number) => Math.min(attempt * 100, 2_000);
/** A command-line run's connection is tried once. */
const noRetry = () => null;

/** Per-connection options, the same for one server, a sentinel's master and a cluster's nodes. */
function connectionOptions(
  name: string,
  { queueWhileDisconnected = false, hotPath = false, bullmq, commandLine = false }: RedisOptions,
): IORedisOptions {
  const timing: IORedisOptions = bullmq
    ? { maxRetriesPerRequest: bullmq === 'worker' ? null : 1 }
    : hotPath
      ? { maxRetriesPerRequest: 0, socketTimeout: COMMAND_TIMEOUT_MS }
      : { maxRetriesPerRequest: 1, commandTimeout: COMMAND_TIMEOUT_MS };
  return {
    connectionName: name,
    enableOfflineQueue: queueWhileDisconnected || commandLine || bullmq !== undefined,
    connectTimeout: CONNECT_TIMEOUT_MS,
    ...timing,
    ...(commandLine && { lazyConnect: true, disconnectTimeout: 0 }),
  };
}

/**
 * ioredis with bounded waits: no offline queue (a command fails at once while disconnected, so
 * the quota decides in memory instead of queueing), no reply awaited longer than
 * COMMAND_TIMEOUT_MS, and reconnection in the background, so Redis coming back needs no restart.
 * `where` is a redis:// URL or a parsed target (redisConnector's).
 */
export function createRedis(
  where: string | Exclude<RedisTarget, { mode: 'cluster' }>,
  name: string,
  options?: RedisOptions,
  access?: Access,
): Redis;
export function createRedis(
  where: string | RedisTarget,
  name: string,
  options?: RedisOptions,
  access?: Access,
): RedisClient;
export function createRedis(
  where: string | RedisTarget,
  name: string,
  options: RedisOptions = {},
  access: Access = {},
): RedisClient {
  const target: RedisTarget = typeof where === 'string' ? { mode: 'single', url: where } : where;
  const { sentinelPassword, ...nodeAccess } = access;
  const perConnection = { ...connectionOptions(name, options), ...nodeAccess };
  const retryStrategy = options.commandLine ? noRetry : reconnectDelay;
  switch (target.mode) {
    case 'single':
      return stallAware(
        new Redis(target.url, {
          ...perConnection,
          ...credentialsInUrl(target.url),
          retryStrategy,
        }),
      );
    case 'sentinel':
      return stallAware(
        new Redis({
          ...perConnection,
          sentinels: target.sentinels,
          name: target.master,
          ...(sentinelPassword !== undefined && { sentinelPassword }),
          ...(nodeAccess.tls && { enableTLSForSentinelMode: true, sentinelTLS: nodeAccess.tls }),
          retryStrategy,
          ...(options.commandLine && { sentinelRetryStrategy: noRetry }),
        }),
      );
    case 'cluster':
      return createCluster(target.nodes, perConnection, options);
  }
}

/** What ioredis keeps of a connection's socket timeout, which `stallAware` takes over. */
interface SocketTimeoutInternals {
  options: { socketTimeout?: number };
  stream: { destroy(error: Error): void; once(event: 'data', listener: () => void): void };
  commandQueue: { length: number };
  socketTimeoutTimer: NodeJS.Timeout | undefined;
  setSocketTimeout(): void;
}

/**
 * ioredis's socket timeout, told apart from a stall of this process: when the timer fires, the
 * connection is dropped only after the event loop's next poll (`setImmediate`), so a reply that
 * came while this process was held up (a long garbage collection, a starved CPU) is read first
 * and keeps the connection and its commands. A Redis that really stays silent is dropped as
 * before, a poll later. Without it a stalled gateway failed commands Redis had carried out.
 */
function stallAware(connection: Redis): Redis {
  const internals = connection as unknown as SocketTimeoutInternals;
  const timeoutMs = internals.options.socketTimeout;
  if (timeoutMs === undefined) return connection;
  internals.setSocketTimeout = function setSocketTimeout(this: SocketTimeoutInternals) {
    const { stream } = this;
    const timer = setTimeout(() => {
      setImmediate(() => {
        // Data read meanwhile, or the connection closed: that 'data' or 'close' took the timer.
        if (this.socketTimeoutTimer !== timer) return;
        this.socketTimeoutTimer = undefined;
        stream.destroy(
          new Error(`Socket timeout. Expecting data, but didn't receive any in ${timeoutMs}ms.`),
        );
      });
    }, timeoutMs);
    this.socketTimeoutTimer = timer;
    stream.once('data', () => {
      clearTimeout(timer);
      if (this.socketTimeoutTimer === timer) this.socketTimeoutTimer = undefined;
      if (this.commandQueue.length === 0 || this.socketTimeoutTimer !== undefined) return;
      this.setSocketTimeout();
    });
  };
  return connection;
}

const SLOTS_REFRESH_MS = 5_000;
const HOT_PATH_SLOTS_REFRESH_MS = 1_000;

/**
 * The user and password a URL carries, which win over REDIS_USERNAME / REDIS_PASSWORD (ioredis
 * would let the options win): those variables only fill in what the URL leaves out.
 */
function credentialsInUrl(url: string): { username?: string; password?: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return {};
  }
  return {
    ...(parsed.username && { username: decodeURIComponent(parsed.username) }),
    ...(parsed.password && { password: decodeURIComponent(parsed.password) }),
  };
}

function createCluster(
  nodes: NodeAddress[],
  perConnection: IORedisOptions,
  { hotPath = false, commandLine = false }: RedisOptions,
): Cluster {
  const { enableOfflineQueue, lazyConnect, ...redisOptions } = perConnection;
  const options: ClusterOptions = {
    enableOfflineQueue,
    ...(lazyConnect && { lazyConnect }),
    redisOptions,
    clusterRetryStrategy: commandLine ? noRetry : reconnectDelay,
    // The map is read again every few seconds (ioredis's default is never): a client that sends
    // few commands, like a subscriber, still learns of a failover; the quota's, which stops
    // sending commands to a cluster that fails, learns within a second that a replica took over.
    slotsRefreshInterval: hotPath ? HOT_PATH_SLOTS_REFRESH_MS : SLOTS_REFRESH_MS,
    // A hot-path command to a shard that is down fails at once (the quota then decides in
    // memory); ioredis's default sends it again every 100 ms, up to 16 times.
    ...(hotPath && {
      retryDelayOnFailover: 0,
      retryDelayOnClusterDown: 0,
      retryDelayOnTryAgain: 0,
    }),
    // With TLS, nodes are reached by the names given, so that their certificates match (a
    // managed cluster's nodes present certificates for names, not addresses).
    ...(redisOptions.tls && { dnsLookup: (address, lookedUp) => lookedUp(null, address) }),
  };
  const cluster = new Cluster(nodes, options);
  cluster.on('+node', stallAware);
  // ioredis connects to a node on its first command, and without an offline queue it refuses
  // the commands sent to a node meanwhile: each node is connected as soon as it is known.
  if (hotPath) {
    cluster.on('+node', (node: Redis) => {
      if (node.status === 'wait') node.connect().catch(() => undefined);
    });
  }
  return cluster;
}

export function isCluster(client: RedisClient): client is Cluster {
  return (client as Cluster).isCluster === true;
}

/**
 * The servers that hold data: the one server, or every master of a cluster (as its client
 * knows them now). For what each of them must be asked (its settings, whether it answers).
 */
export function dataNodes(client: RedisClient): Redis[] {
  return isCluster(client) ? client.nodes('master') : [client];
}

/**
 * Resolves when `client` can serve every key now: the one server answers a PING, or, on a
 * cluster, a read of a key on each shard of its map gets an answer (not a refused connection to
 * a lost master, nor CLUSTERDOWN while its replica is promoted).
 */
export async function answers(client: RedisClient): Promise<void> {
  if (client.status !== 'ready') throw new Error(`Redis connection ${client.status}`);
  if (!isCluster(client)) {
    await client.ping();
    return;
  }
  await Promise.all(keyPerShard(client, PROBE_KEY).map((key) => client.exists(key)));
}

/** Read, never written, by `answers`. */
const PROBE_KEY = 'tool-directory:probe';

/**
 * Calls `listener` when the masters of a cluster change (a failover, a master added or removed),
 * with the masters (`host:port`) before and after; never for one server. Returns a function that
 * stops listening.
 */
export function onMastersChanged(
  client: RedisClient,
  listener: (before: string[], after: string[]) => void,
): () => void {
  if (!isCluster(client)) return () => undefined;
  let masters = mastersOf(client);
  const onRefresh = () => {
    const now = mastersOf(client);
    if (now.join() === masters.join()) return;
    const before = masters;
    masters = now;
    if (before.length > 0) listener(before, now);
  };
  client.on('refresh', onRefresh);
  return () => client.off('refresh', onRefresh);
}

/** The masters of the cluster's slot map, sorted. */
function mastersOf(cluster: Cluster): string[] {
  const owners = new Set<string>();
  for (const servers of cluster.slots) if (servers?.[0] !== undefined) owners.add(servers[0]);
  return [...owners].sort();
}

/**
 * One key per shard, named `<prefix>` on one server and `<prefix>:{<tag>}` on a cluster, with a
 * hash tag chosen for each master's slots: the same keys in every process while the cluster's
 * map stays the same.
 */
export function keyPerShard(client: RedisClient, prefix: string): string[] {
  if (!isCluster(client)) return [prefix];
  const owners = mastersOf(client);
  const keys: string[] = [];
  const covered = new Set<string>();
  // Tags are tried in order; a few dozen reach every master of a usual cluster.
  for (let tag = 0; covered.size < owners.length && tag < 1_000_000; tag++) {
    const key = `${prefix}:{${tag}}`;
    const owner = client.slots[new Command('get', [key]).getSlot()!]?.[0];
    if (owner === undefined || covered.has(owner)) continue;
    covered.add(owner);
    keys.push(key);
  }
  return keys;
}

/**
 * Sends the commands `send` issues on `client` in one write per server: the connection's socket
 * (every master's, on a cluster) corked around it. The quota sends the commands of all the
 * requests read in one event-loop turn this way, at the turn's end, and their replies come back
 * together. ioredis's auto-pipelining batches the same way but builds a Pipeline object per batch
 * (copying every defined script onto it), which cost the gateway more CPU than the system calls
 * it saved (docs/performance.md#current-figures).
 */
export function inOneWrite(client: RedisClient, send: () => void): void {
  // Before the first connection there is no socket; the commands then fail or wait anyway.
  const streams = isCluster(client)
    ? client.nodes('master').map((node) => node.stream)
    : [client.stream];
  for (const stream of streams) stream?.cork();
  try {
    send();
  } finally {
    for (const stream of streams) stream?.uncork();
  }
}

/** A node that keeps failing is named in the logs once a minute at most. */
const NODE_LOG_WINDOW_MS = 60_000;

/**
 * Resolves once `client` is ready, refused, or has waited one connection attempt's timeout. A
 * service that connects without an offline queue waits for this before it serves, so its first
 * requests find Redis connected instead of deciding alone while the connection is still being
 * made; a Redis that is away does not hold the service up.
 */
export function firstConnection(client: RedisClient): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const settled = () => {
      clearTimeout(timer);
      client.off('ready', settled);
      client.off('error', settled);
      resolve();
    };
    const timer = setTimeout(settled, CONNECT_TIMEOUT_MS);
    client.once('ready', settled);
    client.once('error', settled);
  });
}

/**
 * Logs and counts a connection's state changes: a failure is news once, not once per retry. On a
 * cluster, also a node that fails (once a minute at most) and a change of masters (a failover:
 * a master is lost and its replica takes over).
 */
export function watchConnection(
  client: RedisClient,
  name: string,
  logger: Pick<Logger, 'warn' | 'info'>,
  countError: () => void = () => undefined,
): void {
  let healthy = true;
  client.on('error', (err: Error) => {
    countError();
    if (healthy) logger.warn({ err: err.message, connection: name }, 'Redis unavailable');
    healthy = false;
  });
  client.on('ready', () => {
    if (!healthy) logger.info({ connection: name }, 'Redis available again');
    healthy = true;
  });
  if (!isCluster(client)) return;
  const nodeErrors = new LogThrottle<string>(NODE_LOG_WINDOW_MS);
  client.on('node error', (err: Error, node: string) => {
    countError();
    const suppressed = nodeErrors.admit(node);
    if (suppressed === undefined) return;
    logger.warn(
      { err: err.message, connection: name, node, suppressed },
      'Redis Cluster node unavailable',
    );
  });
  onMastersChanged(client, (before, after) =>
    logger.warn(
      { connection: name, masters: after, before },
      'Redis Cluster masters changed (a failover, or nodes added or removed)',
    ),
  );
}

/** How long a closing connection waits for the replies of the commands it has sent. */
export const QUIT_TIMEOUT_MS = 1_000;

/**
 * Closes a connection on shutdown: QUIT, so the replies of commands already sent still arrive,
 * but never waiting on a Redis that cannot answer (a QUIT queued while disconnected would wait for
 * the reconnection, past the shutdown's grace period).
 */
export async function closeRedis(client: RedisClient): Promise<void> {
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  if (!(await succeedsWithin(client.quit(), QUIT_TIMEOUT_MS))) client.disconnect();
}

/**
 * Whether Redis answers (`answers`: every shard of a cluster) within `ms`: asked, since a
 * connection's status can still say `ready` a moment after Redis stopped.
 */
export function answersWithin(client: RedisClient, ms: number): Promise<boolean> {
  return succeedsWithin(answers(client), ms);
}

/** Whether `command` succeeds within `ms`; false when it fails, or has not answered by then. */
async function succeedsWithin(command: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms).unref();
  });
  const answered = command.then(
    () => true,
    () => false,
  );
  const result = await Promise.race([answered, late]);
  clearTimeout(timer);
  return result;
}
