import { type ChildProcess, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { killOnExit } from './child-processes';
import { freePort, waitFor } from './ports';

/**
 * A real redis-server of the test's own, on a free port, so a test can stop and restart it
 * without touching anyone else's Redis. Fails (never skips) if redis-server is missing.
 */
export class RedisServer {
  private process: ChildProcess | undefined;
  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<RedisServer> {
    const server = new RedisServer(await freePort());
    await server.restart();
    return server;
  }

  async restart(): Promise<void> {
    this.process = killOnExit(
      spawn(
        'redis-server',
        ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
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
      client.disconnect();
    }
  }

  client(): Redis {
    const client = new Redis(this.url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    // A refused connection while the server starts is expected; the command's rejection says so.
    client.on('error', () => undefined);
    return client;
  }

  async stop(): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
}
