import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

/**
 * `npm start`: runs the whole system as separate processes, as in production, on embedded
 * defaults. One INTERNAL_TOKEN is generated for all of them when none is set. Ctrl-C (or
 * SIGTERM) stops every process; if one dies, the others are stopped too.
 */
const SERVICES = [
  { name: 'catalog', entry: path.join(__dirname, '..', 'services', 'catalog', 'src', 'server.js') },
  { name: 'gateway', entry: path.join(__dirname, '..', 'gateway', 'src', 'server.js') },
];

const env = {
  ...process.env,
  INTERNAL_TOKEN: process.env.INTERNAL_TOKEN || randomBytes(24).toString('base64url'),
};
const children = new Map<string, ChildProcess>();
let stopping = false;

function stopAll(signal: NodeJS.Signals): void {
  if (stopping) return;
  stopping = true;
  for (const child of children.values()) child.kill(signal);
}

for (const { name, entry } of SERVICES) {
  const child = fork(entry, { env, stdio: 'inherit' });
  children.set(name, child);
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (!stopping) {
      console.error(`${name} exited (${signal ?? code}); stopping the others`);
      process.exitCode = 1;
      stopAll('SIGTERM');
    }
    if (children.size === 0) process.exit();
  });
}

process.on('SIGINT', () => stopAll('SIGTERM'));
process.on('SIGTERM', () => stopAll('SIGTERM'));
