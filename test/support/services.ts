import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { GATEWAY_NODE_FLAGS } from '../../services/gateway/src/process/node-flags';
import { killOnExit } from './child-processes';
import { freePort, waitFor } from './ports';
import { SERVICE_START_MS } from './waits';

const ROOT = path.resolve(__dirname, '..', '..');
export const GATEWAY_ENTRY = path.join(ROOT, 'dist/services/gateway/src/server.js');
export const CATALOG_ENTRY = path.join(ROOT, 'dist/services/catalog/src/server.js');
/** The operators' CLI, `tool-directory`: the file package.json's bin names (built, executable). */
export const CLI_BIN = path.join(
  ROOT,
  (
    JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
    }
  ).bin['tool-directory']!,
);
/** Its command groups, for runCli. */
export const KEYS_CLI = 'keys';
export const CATALOG_CLI = 'catalog';
export const INTERNAL_TOKEN = 'integration-test-internal-token';

/**
 * One built service running as its own process, as in production (`npm test` builds first).
 * Its output is kept for assertions on logs.
 */
export class ServiceProcess {
  readonly output: string[] = [];
  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly port: number,
    readonly metricsPort: number,
  ) {
    // Line by line: a pipe's chunk may end inside a log line.
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
        if (line) this.output.push(line);
      });
    }
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(
    name: 'gateway' | 'catalog',
    env: Record<string, string>,
    {
      waitReady = true,
      openFilesLimit,
    }: {
      waitReady?: boolean;
      /** Runs the service under this limit of open files (`prlimit`, as `ulimit -n`). */
      openFilesLimit?: number;
    } = {},
  ): Promise<ServiceProcess> {
    const port = Number(env.PORT ?? env.CATALOG_PORT) || (await freePort());
    const metricsPort = Number(env.METRICS_PORT) || (await freePort());
    const portEnv = name === 'gateway' ? { PORT: String(port) } : { CATALOG_PORT: String(port) };
    const node = [
      process.execPath,
      ...(name === 'gateway' ? [...GATEWAY_NODE_FLAGS, GATEWAY_ENTRY] : [CATALOG_ENTRY]),
    ];
    const [file, ...args] =
      openFilesLimit === undefined
        ? node
        : ['prlimit', `--nofile=${openFilesLimit}:${openFilesLimit}`, '--', ...node];
    const child = spawn(file!, args, {
      env: {
        PATH: process.env.PATH,
        HOST: '127.0.0.1',
        INTERNAL_TOKEN,
        LOG_LEVEL: 'info',
        ...env,
        ...portEnv,
        METRICS_PORT: String(metricsPort),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    killOnExit(child);
    const service = new ServiceProcess(name, child, port, metricsPort);
    // `close`, not `exit`: the last lines of output may still be in the pipe at `exit`.
    const died = new Promise<never>((_, reject) =>
      child.once('close', (code) =>
        reject(new Error(`${name} exited with ${code}:\n${service.output.join('\n')}`)),
      ),
    );
    died.catch(() => undefined);
    const probe = waitReady ? '/readyz' : '/healthz';
    await Promise.race([
      died,
      waitFor(async () => ((await fetch(`${service.url}${probe}`)).ok ? true : undefined), {
        what: `${name} ${probe}`,
        timeoutMs: SERVICE_START_MS,
      }),
    ]);
    return service;
  }

  async metrics(): Promise<string> {
    return (await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`)).text();
  }

  /** Sends a signal and resolves with the exit code once all output has been read. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    const exited = new Promise<number | null>((r) => this.child.once('close', (code) => r(code)));
    this.child.kill(signal);
    return exited;
  }
}

export function tempDataDir(): string {
  return mkdtempSync(path.join(tmpdir(), 'td-test-'));
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** When (Date.now()) the last of stdout arrived, if any did, and when the process exited. */
  printedAt?: number;
  exitedAt: number;
}

/**
 * Runs `tool-directory <argv…>` with this environment, as a user's shell would: the bin file
 * itself, started by its `#!/usr/bin/env node` line. The Node running the tests comes first on
 * PATH, as `npx` puts the project's pinned Node first.
 */
export async function runBin(argv: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(CLI_BIN, argv, {
    env: { PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let printedAt: number | undefined;
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
    printedAt = Date.now();
  });
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  let exitedAt = 0;
  child.once('exit', () => (exitedAt = Date.now()));
  // 'close' comes once the output has been read too, which may be after 'exit'.
  const code = await new Promise<number | null>((r) => child.once('close', r));
  return { code, stdout, stderr, printedAt, exitedAt };
}

/** Runs `tool-directory <command> <args…>` (KEYS_CLI, CATALOG_CLI) with this environment. */
export function runCli(
  command: string,
  args: string[],
  env: Record<string, string>,
): Promise<CliResult> {
  return runBin([command, ...args], env);
}

/** Runs `tool-directory keys …` against a store and returns the printed JSON. */
export async function keysCli(args: string[], env: Record<string, string>): Promise<unknown> {
  const { code, stdout, stderr } = await runCli(KEYS_CLI, args, env);
  if (code !== 0) throw new Error(`keys ${args.join(' ')} exited ${code}: ${stderr}`);
  return JSON.parse(stdout);
}

/** A GET through the gateway with an API key: status, headers and the JSON body (null if none). */
export async function keyedGet(
  gatewayUrl: string,
  key: string,
  url: string,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${gatewayUrl}${url}`, {
    headers: { 'x-api-key': key, ...headers },
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: (text ? JSON.parse(text) : null) as Record<string, any>, // eslint-disable-line @typescript-eslint/no-explicit-any
  };
}

/** A Free and a Pro key made with the keys CLI, for `<tier>@<domain>`. */
export async function freeAndProKeys(
  env: Record<string, string>,
  domain: string,
): Promise<Record<'free' | 'pro', string>> {
  const keys = { free: '', pro: '' };
  for (const tier of ['free', 'pro'] as const) {
    const created = (await keysCli(
      ['create', '--tier', tier, '--email', `${tier}@${domain}`, '--name', tier],
      env,
    )) as { apiKey: string };
    keys[tier] = created.apiKey;
  }
  return keys;
}

/** Writes tool records to a file for `tool-directory catalog import`: a JSON array or NDJSON. */
export function importFile(records: unknown[], format: 'json' | 'ndjson' = 'ndjson'): string {
  const file = path.join(tempDataDir(), `import.${format}`);
  writeFileSync(
    file,
    format === 'json' ? JSON.stringify(records) : records.map((r) => JSON.stringify(r)).join('\n'),
  );
  return file;
}

/** A catalog and a gateway in front of it, as `npm start` runs them. */
export async function startStack(
  gatewayEnv: Record<string, string> = {},
  catalogEnv: Record<string, string> = {},
) {
  const catalog = await ServiceProcess.start('catalog', catalogEnv);
  const gateway = await ServiceProcess.start('gateway', {
    CATALOG_URL: catalog.url,
    DATA_DIR: tempDataDir(),
    REGISTRATIONS_PER_HOUR: '1000',
    ...gatewayEnv,
  });
  return { catalog, gateway, stop: () => Promise.all([gateway.stop(), catalog.stop()]) };
}

let registrations = 0;

/** Registers a fresh Free key through the public endpoint. */
export async function registerKey(gatewayUrl: string): Promise<string> {
  registrations += 1;
  const response = await fetch(`${gatewayUrl}/v1/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      email: `dev${process.pid}-${registrations}-${Date.now()}@example.com`,
      name: 'Test',
    }),
  });
  if (response.status !== 201)
    throw new Error(`register answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { apiKey: string }).apiKey;
}
