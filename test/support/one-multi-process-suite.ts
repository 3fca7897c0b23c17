import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Suites that start several processes (the services, Redis clusters and Sentinels, Chromium) run
 * one at a time across Jest's workers, so that two of them never share the machine's two CPUs:
 * their timings (a cluster's failover, a feed's delivery, a load of thousands of requests) are
 * then a busy machine's, not a contended one's. The other worker goes on with in-process suites.
 * A suite is known by what its source starts; the lock is a directory only one worker can
 * create, named for this checkout, and taken over when its holder has died.
 */
const STARTS_PROCESSES =
  /\b(ServiceProcess|RedisCluster|RedisSentinel)\b|redis-cluster|redis-sentinel|redis-stack|chromium/;

const LOCK = path.join(
  tmpdir(),
  `tool-directory-suite-${createHash('sha256').update(__dirname).digest('hex').slice(0, 12)}.lock`,
);
const OWNER = path.join(LOCK, 'pid');
/** Longer than the longest such suite: past it the suite runs anyway, saying so. */
const WAIT_MS = 10 * 60_000;

function holderAlive(): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(OWNER, 'utf8'));
  } catch {
    // Created, its owner file not written yet: held.
    return true;
  }
  if (!Number.isInteger(pid) || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function take(): Promise<void> {
  const deadline = Date.now() + WAIT_MS - 10_000;
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(OWNER, String(process.pid));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (!holderAlive()) {
      rmSync(LOCK, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) {
      console.warn(`${LOCK} still held after ${WAIT_MS / 60_000} minutes: running alongside`);
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

function release(): void {
  try {
    if (Number(readFileSync(OWNER, 'utf8')) === process.pid) rmSync(LOCK, { recursive: true });
  } catch {
    // Not held by this worker (taken over, or never taken).
  }
}

const suite = expect.getState().testPath;
if (suite !== undefined && STARTS_PROCESSES.test(readFileSync(suite, 'utf8'))) {
  beforeAll(take, WAIT_MS);
  afterAll(release);
}
