import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import path from 'node:path';
import { killOnExit } from '../support/child-processes';

export const repoRoot = path.resolve(__dirname, '../..');

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment a person's shell gives npm: none of the npm_* variables, nor the
 * node_modules/.bin directories on PATH, that an enclosing `npm test` or `npx jest` (or .ci/run's
 * npm_config_loglevel) would pass down: npm, and a script naming a tool that is not installed,
 * behave as they would for a person.
 */
export function shellEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^npm_/i.test(key)) env[key] = value;
  }
  env.PATH = (env.PATH ?? '')
    .split(path.delimiter)
    .filter((dir) => !dir.endsWith(path.join('node_modules', '.bin')))
    .join(path.delimiter);
  return { ...env, ...extra };
}

/** Runs a command to its end and keeps what it printed, apart per stream. */
export function run(
  command: string,
  args: string[],
  { cwd = repoRoot, env = shellEnv() }: { cwd?: string; env?: Record<string, string> } = {},
): Promise<CommandResult> {
  const child = killOnExit(spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
