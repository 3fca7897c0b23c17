import type { Redis } from 'ioredis';
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import path from 'node:path';
import { killOnExit } from '../test/support/child-processes';
import { INTERNAL_TOKEN, keysCli } from '../test/support/services';

/** Starts one of bench/'s own servers (TypeScript, through tsx) and waits for its port. */
export async function forkBenchServer(file: string, env: Record<string, string> = {}) {
  const child = killOnExit(
    fork(path.join(__dirname, file), {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, INTERNAL_TOKEN, ...env },
      stdio: 'inherit',
    }),
  );
  const { port } = await new Promise<{ port: number }>((resolve) =>
    child.once('message', resolve as never),
  );
  return { child, url: `http://127.0.0.1:${port}` };
}

/** An API key of the tier in the store the environment names, from `npm run keys`. */
export async function createKey(tier: string, env: Record<string, string>): Promise<string> {
  const email = `bench-${tier}-${Date.now()}@example.com`;
  const created = (await keysCli(
    ['create', '--tier', tier, '--email', email, '--name', 'Bench'],
    env,
  )) as {
    apiKey: string;
  };
  return created.apiKey;
}

/** The process id of a Redis server, as it tells it: to pin it, or to read its CPU time. */
export async function redisPidOf(client: Redis): Promise<number> {
  return Number(/process_id:(\d+)/.exec(await client.info('server'))![1]);
}

/** An OTLP/HTTP endpoint that accepts and drops spans, so export cost is real but bounded. */
export async function startSink(): Promise<number> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  server.unref();
  return (server.address() as { port: number }).port;
}

/** What a section started, stopped in reverse order at its end, also after a failed start. */
export class Started {
  private readonly stops: (() => unknown)[] = [];

  add<T>(thing: T, stop: (thing: T) => unknown): T {
    this.stops.push(() => stop(thing));
    return thing;
  }

  async stopAll(): Promise<void> {
    for (const stop of this.stops.reverse()) await stop();
  }
}
