import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { PROPAGATION_MS, within } from './waits';

/**
 * Where the kernel takes the local ports of outgoing connections (Linux; 32768–60999 by default).
 * A port handed out from inside that range can be taken by another test's outgoing connection
 * between the check and the service binding it (`npm start` once failed with EADDRINUSE so), so
 * ports are handed out below it.
 */
function ephemeralLow(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/);
    return Number(low) || 32_768;
  } catch {
    return 32_768;
  }
}

const LOWEST = 20_000;
const HIGHEST = Math.max(LOWEST + 1_000, ephemeralLow()) - 1;

/** Whether 127.0.0.1:port can be bound now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Ports this process handed out: never twice, also to calls made at the same moment. */
const handedOut = new Set<number>();

/**
 * A TCP port that was free a moment ago on 127.0.0.1, below the ephemeral range. With `pairedAt`,
 * port + pairedAt is free and below that range too (a Redis Cluster node's bus port is its port
 * + 10000).
 */
export async function freePort({ pairedAt }: { pairedAt?: number } = {}): Promise<number> {
  const highest = HIGHEST - (pairedAt ?? 0);
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * (highest - LOWEST + 1));
    const ports = pairedAt === undefined ? [port] : [port, port + pairedAt];
    if (ports.some((p) => handedOut.has(p))) continue;
    for (const p of ports) handedOut.add(p);
    if ((await Promise.all(ports.map(bindable))).every(Boolean)) return port;
  }
  throw new Error(`no free port found between ${LOWEST} and ${highest}`);
}

/**
 * Polls `probe` until it returns a value. Without `timeoutMs`, for what the product does at once
 * (a reply, an event, a write): the time a busy machine may take for it (waits.ts).
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined>,
  { timeoutMs = within(0), intervalMs = 50, what = 'condition' } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`Timed out waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
}

/**
 * Polls `check` until it holds, and asserts the product's one-second rule for an operator's change
 * made before the call: no probe sent PROPAGATION_MS or more after the call missed it. A probe
 * sent that late reaches the service later still, so this holds however slowly a loaded machine
 * answers the probes, and fails when the change waits for a cache to expire.
 */
export async function withinOneSecond(what: string, check: () => Promise<boolean>): Promise<void> {
  const since = Date.now();
  let lastMiss = since;
  await waitFor(
    async () => {
      const sentAt = Date.now();
      if (await check()) return true;
      lastMiss = sentAt;
      return undefined;
    },
    { timeoutMs: within(PROPAGATION_MS), intervalMs: 25, what },
  );
  expect(lastMiss - since).toBeLessThan(PROPAGATION_MS);
}
