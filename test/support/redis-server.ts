import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Cluster, Redis } from 'ioredis';
import { killOnExit } from './child-processes';
import { freePort, waitFor } from './ports';

/**
 * Disconnects a test's ioredis client without leaving ioredis's 2 s close timer behind, which
 * keeps Jest from exiting: `disconnect()` arms that timer for the connection's socket and clears
 * it when the socket closes, so on a socket already closed (a client that ended after a refused
 * connection, or one reconnecting) it runs its full 2 s. An ended client is left as it is; one
 * reconnecting is let connect (or end) first.
 */
export async function closeClient(client: Redis | Cluster): Promise<void> {
  if (client.status !== 'ready' && client.status !== 'end') {
    await new Promise((settled) => {
      client.once('ready', settled);
      client.once('end', settled);
    });
  }
  if (client.status !== 'end') client.disconnect();
}

/**
 * A real redis-server of the test's own, on a free port, so a test can stop and restart it
 * without touching anyone else's Redis. Fails (never skips) if redis-server is missing. It keeps
 * nothing on disk, so a restart is empty, unless `config` (redis-server options such as
 * `--appendonly yes`) says otherwise; its files go to a directory of its own.
 */
export class RedisServer {
  private process: ChildProcess | undefined;
  private readonly dir = mkdtempSync(path.join(tmpdir(), 'td-redis-'));
  private constructor(
    readonly port: number,
    private readonly config: string[],
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(config: string[] = []): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), config);
    await server.restart();
    return server;
  }

  async restart(): Promise<void> {
    this.process = killOnExit(
      spawn(
        'redis-server',
        [
          ...['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir],
          ...['--save', '', '--appendonly', 'no', ...this.config],
        ],
        { stdio: 'ignore' },
      ),
    );
    const exited = new Promise<never>((_, reject) =>
      this.process!.once('error', (err) =>
        reject(new Error(`redis-server could not start: ${err.message}`)),
      ),
    );
    await Promise.race([
      exited,
      waitFor(() => this.ping(), { what: `redis-server on ${this.port}` }),
    ]);
  }

  private async ping(): Promise<true | undefined> {
    const client = this.client();
    try {
      return (await client.ping()) === 'PONG' ? true : undefined;
    } finally {
      await closeClient(client);
    }
  }

  client(): Redis {
    const client = new Redis(this.url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    // A refused connection while the server starts is expected; the command's rejection says so.
    client.on('error', () => undefined);
    return client;
  }

  /** SIGSTOP stalls the server without closing a connection; SIGCONT resumes it. */
  signal(signal: 'SIGSTOP' | 'SIGCONT'): void {
    this.process?.kill(signal);
  }

  async stop(): Promise<void> {
    const child = this.process;
    // Killed by a signal, a process has no exit code: its signal code says it ended.
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
}
