import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import type { RedisSettings } from '../../services/shared/redis-config';
import { killOnExit } from './child-processes';
import { freePort, waitFor } from './ports';
import { closeClient } from './redis-server';
import { within } from './waits';

const run = promisify(execFile);

/** A node's cluster bus listens on its port + 10000. */
const BUS_OFFSET = 10_000;

export interface ClusterOptions {
  masters?: number;
  /** Replicas per master: 1 makes a failover possible. */
  replicas?: number;
  /**
   * How long a master may not answer before the others mark it failed and its replica takes
   * over (`cluster-node-timeout`; Redis's default is 15 s).
   */
  nodeTimeoutMs?: number;
  /** More redis-server options for every node. */
  config?: string[];
  /**
   * Clients must use TLS (on a port of its own, `tlsPort`) and this password, as on a managed
   * cluster. The certificate, of a CA of the test's own, names `redis.test`, not the address:
   * checking it needs REDIS_TLS_SERVERNAME.
   */
  secure?: { password: string };
}

/** The name in the nodes' certificate. */
export const TLS_SERVER_NAME = 'redis.test';

/** A CA and a certificate for TLS_SERVER_NAME signed by it, made with openssl. */
async function certificates(): Promise<{ dir: string; ca: string; cert: string; key: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'td-redis-tls-'));
  const at = (file: string) => path.join(dir, file);
  const openssl = (...args: string[]) => run('openssl', args, { cwd: dir });
  await openssl(
    ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1'],
    ...['-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=td-test-ca'],
  );
  await openssl(
    ...['req', '-newkey', 'rsa:2048', '-nodes'],
    ...['-keyout', 'server.key', '-out', 'server.csr', '-subj', `/CN=${TLS_SERVER_NAME}`],
  );
  writeFileSync(at('san.ext'), `subjectAltName=DNS:${TLS_SERVER_NAME}\n`);
  await openssl(
    ...['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key'],
    ...['-CAcreateserial', '-out', 'server.crt', '-days', '1', '-extfile', 'san.ext'],
  );
  return { dir, ca: at('ca.crt'), cert: at('server.crt'), key: at('server.key') };
}

type Certificates = Awaited<ReturnType<typeof certificates>>;

/**
 * One redis-server of a cluster, in its own directory (its nodes.conf) on its own port; with
 * TLS, clients use `tlsPort` and the plain port serves only the test's own checks.
 */
class ClusterNode {
  private process: ChildProcess | undefined;
  private readonly dir = mkdtempSync(path.join(tmpdir(), 'td-redis-cluster-'));

  constructor(
    readonly port: number,
    private readonly config: string[],
    private readonly secure?: { password: string; tlsPort: number; certificates: Certificates },
  ) {}

  /** What clients are given: the TLS port when there is one. */
  get clientAddress(): string {
    return `127.0.0.1:${this.secure?.tlsPort ?? this.port}`;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    const child = this.process;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  async start(): Promise<void> {
    this.process = killOnExit(
      spawn(
        'redis-server',
        [
          ...['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir],
          ...['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'],
          ...['--save', '', '--appendonly', 'no', ...this.config],
          ...this.secureConfig(),
        ],
        { stdio: 'ignore' },
      ),
    );
    const failed = new Promise<never>((_, reject) =>
      this.process!.once('error', (err) =>
        reject(new Error(`redis-server could not start: ${err.message}`)),
      ),
    );
    await Promise.race([
      failed,
      waitFor(async () => ((await this.command('PING')) === 'PONG' ? true : undefined), {
        what: `cluster node on ${this.port}`,
      }),
    ]);
  }

  private secureConfig(): string[] {
    if (!this.secure) return [];
    const { password, tlsPort, certificates: tls } = this.secure;
    return [
      ...['--tls-port', String(tlsPort), '--tls-cluster', 'yes', '--tls-replication', 'yes'],
      ...['--tls-cert-file', tls.cert, '--tls-key-file', tls.key, '--tls-ca-cert-file', tls.ca],
      ...['--tls-auth-clients', 'no', '--cluster-port', String(this.port + BUS_OFFSET)],
      ...['--requirepass', password, '--masterauth', password],
    ];
  }

  /** One command on a connection of its own, never redirected (`MOVED` is the answer). */
  async command(...args: string[]): Promise<unknown> {
    const client = new Redis(this.port, '127.0.0.1', {
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      lazyConnect: true,
      ...(this.secure && { password: this.secure.password }),
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return await client.call(args[0]!, ...args.slice(1));
    } finally {
      await closeClient(client);
    }
  }

  async info(section: string): Promise<Record<string, string>> {
    const text = String(await this.command('INFO', section));
    return Object.fromEntries(
      text
        .split('\r\n')
        .filter((line) => line.includes(':'))
        .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)]),
    );
  }

  /** SIGSTOP stalls the node without closing a connection; SIGCONT resumes it. */
  signal(signal: 'SIGSTOP' | 'SIGCONT'): void {
    this.process?.kill(signal);
  }

  /** Dies at once, as a crashed or lost machine: no shutdown, no save. */
  async kill(): Promise<void> {
    const child = this.process;
    if (!child || !this.running) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
}

/** The nodes' `cluster-node-timeout` unless a test says otherwise. */
const NODE_TIMEOUT_MS = 2_000;

/**
 * The longest a cluster with this node timeout takes to replace a master that stopped answering
 * (the Redis Cluster specification): the others mark it failed after the node timeout and a round
 * of gossip, its replica asks for votes after up to a second or so, and an election that got no
 * majority is tried again after twice the failover timeout, itself twice the node timeout.
 */
export function clusterFailoverMs(nodeTimeoutMs = NODE_TIMEOUT_MS): number {
  const detected = 2 * nodeTimeoutMs;
  const elected = 1_000 + 4 * nodeTimeoutMs;
  return within(detected + elected);
}

/**
 * A real Redis Cluster of the test's own: `masters` redis-server processes with
 * `--cluster-enabled yes` (and `replicas` replicas each), joined by `redis-cli --cluster create`,
 * on free ports whose bus ports (+10000) are free too. Nothing is kept on disk. Fails (never
 * skips) when redis-server or redis-cli is missing.
 */
export class RedisCluster {
  private constructor(
    readonly nodes: ClusterNode[],
    private readonly nodeTimeoutMs: number,
    private readonly secure?: { password: string; certificates: Certificates },
  ) {}

  /** The longest this cluster takes to replace a master that stopped answering. */
  get failoverMs(): number {
    return clusterFailoverMs(this.nodeTimeoutMs);
  }

  static async start({
    masters = 3,
    replicas = 0,
    nodeTimeoutMs = NODE_TIMEOUT_MS,
    config = [],
    secure,
  }: ClusterOptions = {}): Promise<RedisCluster> {
    const count = masters * (1 + replicas);
    const tls = secure && { ...secure, certificates: await certificates() };
    const nodes: ClusterNode[] = [];
    for (let i = 0; i < count; i++) {
      const port = await freePort({ pairedAt: BUS_OFFSET });
      const nodeConfig = ['--cluster-node-timeout', String(nodeTimeoutMs), ...config];
      nodes.push(new ClusterNode(port, nodeConfig, tls && { ...tls, tlsPort: await freePort() }));
    }
    const cluster = new RedisCluster(nodes, nodeTimeoutMs, tls);
    await Promise.all(nodes.map((node) => node.start()));
    await run('redis-cli', [
      ...(secure ? ['-a', secure.password, '--no-auth-warning'] : []),
      '--cluster',
      'create',
      ...nodes.map((node) => node.address),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    await cluster.healthy();
    return cluster;
  }

  /** What REDIS_CLUSTER_NODES names: every node, as an operator would list some of them. */
  get seeds(): string {
    return this.nodes.map((node) => node.clientAddress).join(',');
  }

  /** The services' environment for this cluster: its nodes, and the password and TLS it needs. */
  get env(): Record<string, string> {
    if (!this.secure) return { REDIS_CLUSTER_NODES: this.seeds };
    return {
      REDIS_CLUSTER_NODES: this.seeds,
      REDIS_PASSWORD: this.secure.password,
      REDIS_TLS: 'true',
      REDIS_TLS_CA_FILE: this.secure.certificates.ca,
      REDIS_TLS_SERVERNAME: TLS_SERVER_NAME,
    };
  }

  /** The same, as the settings redisConnector takes in this process. */
  get settings(): RedisSettings {
    const { REDIS_TLS, ...env } = this.env;
    return { ...env, ...(REDIS_TLS && { REDIS_TLS: true }) };
  }

  /**
   * Waits until every running node says `cluster_state:ok`, every slot is served, every node
   * has a connected bus link to every other running node (a PUBLISH reaches only the nodes its
   * node is linked to, and `cluster_state:ok` comes before the gossip has linked them all), and
   * every replica is in sync with its master (so that a failover has a replica to promote). A
   * failover is the longest the cluster takes to get there; just created, it only has to meet
   * and sync.
   */
  async healthy(): Promise<void> {
    const timeoutMs = this.failoverMs;
    await waitFor(
      async () => {
        const running = this.nodes.filter((n) => n.running);
        for (const node of running) {
          const info = String(await node.command('CLUSTER', 'INFO'));
          if (!info.includes('cluster_state:ok') || !info.includes('cluster_slots_ok:16384')) {
            return undefined;
          }
          if (!(await linkedToEveryRunningNode(node, running.length))) return undefined;
          const replication = await node.info('replication');
          if (replication.role === 'slave' && replication.master_link_status !== 'up') {
            return undefined;
          }
        }
        return true;
      },
      { timeoutMs, intervalMs: 100, what: 'cluster_state:ok on every node' },
    );
  }

  /** The running nodes that are masters now. */
  async masters(): Promise<ClusterNode[]> {
    const masters: ClusterNode[] = [];
    for (const node of this.nodes.filter((n) => n.running)) {
      if ((await node.info('replication')).role === 'master') masters.push(node);
    }
    return masters;
  }

  /** The master that serves `key`'s slot now, as the cluster itself sees it (`CLUSTER NODES`). */
  async masterOf(key: string): Promise<ClusterNode> {
    const any = this.nodes.find((n) => n.running)!;
    const slot = Number(await any.command('CLUSTER', 'KEYSLOT', key));
    const lines = String(await any.command('CLUSTER', 'NODES'))
      .trim()
      .split('\n');
    for (const line of lines) {
      const [, address, flags, , , , , , ...ranges] = line.split(' ');
      if (!flags!.includes('master') || flags!.includes('fail')) continue;
      const serves = ranges.some((range) => {
        const [from, to = from] = range.split('-').map(Number);
        return slot >= from! && slot <= to!;
      });
      const port = Number(address!.split('@')[0]!.split(':')[1]);
      if (serves) return this.nodes.find((n) => n.port === port)!;
    }
    throw new Error(`no master serves the slot of ${key}`);
  }

  /** A client of the whole cluster, for a test's own checks. */
  client(): Cluster {
    const client = new Cluster(
      this.nodes.filter((n) => n.running).map((n) => ({ host: '127.0.0.1', port: n.port })),
      {
        clusterRetryStrategy: () => null,
        ...(this.secure && { redisOptions: { password: this.secure.password } }),
      },
    );
    client.on('error', () => undefined);
    return client;
  }

  /** Every key on every master: the cluster empty again. */
  async flushall(): Promise<void> {
    await Promise.all((await this.masters()).map((node) => node.command('FLUSHALL')));
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.kill()));
  }
}

/**
 * Whether `node`'s bus is connected to as many other nodes as are running: in `CLUSTER NODES`,
 * the link state (eighth field) of every node it does not mark as failed or gone.
 */
async function linkedToEveryRunningNode(node: ClusterNode, running: number): Promise<boolean> {
  const lines = String(await node.command('CLUSTER', 'NODES'))
    .trim()
    .split('\n')
    .map((line) => line.split(' '));
  const live = lines.filter(([, , flags]) => !/fail|noaddr|handshake/.test(flags ?? ''));
  return live.length === running && live.every((fields) => fields[7] === 'connected');
}
