import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { killOnExit } from './child-processes';
import { freePort, waitFor } from './ports';
import { closeClient } from './redis-server';

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
}

/** One redis-server of a cluster, in its own directory (its nodes.conf) on its own port. */
class ClusterNode {
  private process: ChildProcess | undefined;
  private readonly dir = mkdtempSync(path.join(tmpdir(), 'td-redis-cluster-'));

  constructor(
    readonly port: number,
    private readonly config: string[],
  ) {}

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

  /** One command on a connection of its own, never redirected (`MOVED` is the answer). */
  async command(...args: string[]): Promise<unknown> {
    const client = new Redis(this.port, '127.0.0.1', {
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      lazyConnect: true,
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

  /** Dies at once, as a crashed or lost machine: no shutdown, no save. */
  async kill(): Promise<void> {
    const child = this.process;
    if (!child || !this.running) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
}

/**
 * A real Redis Cluster of the test's own: `masters` redis-server processes with
 * `--cluster-enabled yes` (and `replicas` replicas each), joined by `redis-cli --cluster create`,
 * on free ports whose bus ports (+10000) are free too. Nothing is kept on disk. Fails (never
 * skips) when redis-server or redis-cli is missing.
 */
export class RedisCluster {
  private constructor(readonly nodes: ClusterNode[]) {}

  static async start({
    masters = 3,
    replicas = 0,
    nodeTimeoutMs = 2_000,
    config = [],
  }: ClusterOptions = {}): Promise<RedisCluster> {
    const count = masters * (1 + replicas);
    const ports: number[] = [];
    for (let i = 0; i < count; i++) ports.push(await freePort({ pairedAt: BUS_OFFSET }));
    const nodes = ports.map(
      (port) => new ClusterNode(port, ['--cluster-node-timeout', String(nodeTimeoutMs), ...config]),
    );
    const cluster = new RedisCluster(nodes);
    await Promise.all(nodes.map((node) => node.start()));
    await run('redis-cli', [
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
    return this.nodes.map((node) => node.address).join(',');
  }

  get env(): { REDIS_CLUSTER_NODES: string } {
    return { REDIS_CLUSTER_NODES: this.seeds };
  }

  /**
   * Waits until every running node says `cluster_state:ok`, every slot is served, and every
   * replica is in sync with its master (so that a failover has a replica to promote).
   */
  async healthy(timeoutMs = 30_000): Promise<void> {
    await waitFor(
      async () => {
        for (const node of this.nodes.filter((n) => n.running)) {
          const info = String(await node.command('CLUSTER', 'INFO'));
          if (!info.includes('cluster_state:ok') || !info.includes('cluster_slots_ok:16384')) {
            return undefined;
          }
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
      { clusterRetryStrategy: () => null },
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
