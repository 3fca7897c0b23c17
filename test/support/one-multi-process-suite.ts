import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { lock } from 'proper-lockfile';

/**
 * Suites that start several processes (the services, Redis clusters and Sentinels, Chromium, whole
 * builds) run one at a time across Jest's workers, so that two of them never share the machine's
 * two CPUs:
 * their timings (a cluster's failover, a feed's delivery, a load of thousands of requests) are
 * then a busy machine's, not a contended one's. The other worker goes on with in-process suites.
 * A suite is known by what its source starts; the lock (proper-lockfile) is named for this
 * checkout, and a lock whose holder died goes stale and is taken over.
 */
const STARTS_PROCESSES =
  /\b(ServiceProcess|RedisCluster|RedisSentinel)\b|redis-cluster|redis-sentinel|redis-stack|chromium|scripts\/build\.js/;

const LOCKED = path.join(
  tmpdir(),
  `tool-directory-suites-${createHash('sha256').update(__dirname).digest('hex').slice(0, 12)}`,
);
/** Longer than the longest such suite. */
const WAIT_MS = 10 * 60_000;
const RETRY_MS = 200;

const suite = expect.getState().testPath;
if (suite !== undefined && STARTS_PROCESSES.test(readFileSync(suite, 'utf8'))) {
  let release: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    mkdirSync(LOCKED, { recursive: true });
    release = await lock(LOCKED, {
      // A holder refreshes its lock every half of this; a busy event loop is not a dead one.
      stale: 60_000,
      retries: { retries: WAIT_MS / RETRY_MS, factor: 1, minTimeout: RETRY_MS },
    });
  }, WAIT_MS + 60_000);
  afterAll(() => release?.());
}
