import type { ChildProcess } from 'node:child_process';

const running = new Set<ChildProcess>();

// A failed test must not leave servers behind to keep Jest (and the machine) busy.
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Kills the child when the test process exits, if it is still running then. */
export function killOnExit(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}
