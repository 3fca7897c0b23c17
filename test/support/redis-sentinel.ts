import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { killOnExit } from './child-processes';
import { freePort, waitFor } from './ports';
import { RedisServer, closeClient } from './redis-server';
import { within } from './waits';

/** The master group the sentinel watches. */
export const SENTINEL_MASTER = 'mymaster';
/** How long the master may not answer before the sentinel declares it down. */
const DOWN_AFTER_MS = 1_000;
/** How long a failover may take before the sentinel gives it up (and tries again later). */
const FAILOVER_TIMEOUT_MS = 10_000;
/** How often a sentinel asks a master for INFO, where it learns of the master's replicas. */
const SENTINEL_INFO_PERIOD_MS = 10_000;

/**
 * The longest the sentinel takes to promote the replica of a master that stopped: it declares the
 * master down after DOWN_AFTER_MS, and a failover that did not complete within the failover
 * timeout is tried again after twice that timeout (Redis's Sentinel documentation).
 */
export const SENTINEL_FAILOVER_MS = within(DOWN_AFTER_MS + 3 * FAILOVER_TIMEOUT_MS);

/**
 * A master, its replica and one sentinel watching them (`redis-server --sentinel`), of the test's
 * own, on free ports. The sentinel declares a master down after 1 s without an answer and
 * promotes the replica. Fails (never skips) when redis-server is missing.
 */
export class RedisSentinel {
  private constructor(
    readonly master: RedisServer,
    readonly replica: RedisServer,
    private readonly sentinel: ChildProcess,
    readonly sentinelPort: number,
  ) {}

  static async start(): Promise<RedisSentinel> {
    const master = await RedisServer.start();
    const replica = await RedisServer.start(['--replicaof', '127.0.0.1', String(master.port)]);
    const port = await freePort();
    // The sentinel rewrites its configuration file: it gets a directory of its own.
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'td-sentinel-')), 'sentinel.conf');
    writeFileSync(
      file,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${master.port} 1`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER} ${DOWN_AFTER_MS}`,
        `sentinel failover-timeout ${SENTINEL_MASTER} ${FAILOVER_TIMEOUT_MS}`,
      ].join('\n'),
    );
    const sentinel = killOnExit(spawn('redis-server', [file, '--sentinel'], { stdio: 'ignore' }));
    const cluster = new RedisSentinel(master, replica, sentinel, port);
    // Ready once the sentinel knows the master and its replica, from the master's INFO.
    await waitFor(
      async () => {
        const replicas = (await cluster.ask('SENTINEL', 'REPLICAS', SENTINEL_MASTER)) as unknown[];
        return replicas.length === 1 ? true : undefined;
      },
      {
        timeoutMs: within(SENTINEL_INFO_PERIOD_MS),
        what: 'the sentinel to see the master and its replica',
      },
    );
    return cluster;
  }

  get env(): { REDIS_SENTINELS: string; REDIS_SENTINEL_MASTER: string } {
    return {
      REDIS_SENTINELS: `127.0.0.1:${this.sentinelPort}`,
      REDIS_SENTINEL_MASTER: SENTINEL_MASTER,
    };
  }

  /** The port of the master the sentinel names now. */
  async masterPort(): Promise<number> {
    const [, port] = (await this.ask('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER)) as [
      string,
      string,
    ];
    return Number(port);
  }

  private async ask(...args: string[]): Promise<unknown> {
    const client = new Redis(this.sentinelPort, '127.0.0.1', {
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => undefined);
    try {
      return await client.call(args[0]!, ...args.slice(1));
    } finally {
      await closeClient(client);
    }
  }

  async stop(): Promise<void> {
    const exited = new Promise((r) => this.sentinel.once('exit', r));
    if (this.sentinel.exitCode === null && this.sentinel.signalCode === null) {
      this.sentinel.kill('SIGKILL');
      await exited;
    }
    await Promise.all([this.master.stop(), this.replica.stop()]);
  }
}
