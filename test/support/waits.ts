import { GatewayConfigSchema } from '../../services/gateway/src/config';

/**
 * How long the suite waits, in one place: what the product promises (its schedules, imported where
 * the product exports them) plus how late a busy machine runs it. A wait that succeeds returns as
 * soon as its condition holds, so a generous limit costs time only to a run that fails anyway; a
 * limit shorter than the slowest honest path fails runs where the product did nothing wrong.
 */

/**
 * How late a busy machine may be with anything a test waits for, beyond the product's own
 * schedule: a reply, a log line, a reconnection already due, a timer's turn. CI runs the suite's
 * two Jest workers on two cores shared with other work, each worker starting services, Redis
 * servers and clusters, nginx and Prometheus, so a process may wait seconds for a core: on this
 * machine a catalog and a gateway took 3–4 s to start beside the suite, and 8–12 s with two more
 * busy processes (`stress-ng --cpu 2`). Ten seconds covers a step that takes a fraction of a
 * second on an idle machine.
 */
export const BUSY_MACHINE_MS = 10_000;

/** The longest to wait for what the product does within `promisedMs`: that, late by a busy machine. */
export function within(promisedMs: number): number {
  return promisedMs + BUSY_MACHINE_MS;
}

/**
 * A built service's process, from its spawn to answering its readiness probe: 1.5–2 s on an idle
 * machine, up to 6 s with both cores busy (measured as above); three times that, since most of a
 * start is CPU (loading and compiling modules), which a busier machine stretches.
 */
export const SERVICE_START_MS = 20_000;

/**
 * The longest a gateway takes to answer a request under load: its call to the catalog, cut at
 * UPSTREAM_TIMEOUT_MS (services/gateway/src/config.ts's default), and one call sent again, late by a busy
 * machine. A wait for a number of answers from a few concurrent clients is as long.
 */
export const GATEWAY_ANSWER_MS = within(
  2 * (GatewayConfigSchema.properties.UPSTREAM_TIMEOUT_MS.default as number),
);

/**
 * The product's rule for an operator's change (a key created, revoked or re-tiered; a catalog
 * import or edit): every replica serves it within a second (docs/api.md, docs/operations.md).
 */
export const PROPAGATION_MS = 1_000;

/**
 * The longest a lost Redis connection waits before its next attempt: services/shared/redis.ts
 * retries soon at first, then every 2 s (its `reconnectDelay`, which it does not export).
 */
export const REDIS_RECONNECT_MAX_MS = 2_000;

/**
 * The longest an info line waits in a service's log buffer: services/shared/logger.ts writes
 * batches at least once a second (its LOG_FLUSH_MS, which it does not export).
 */
export const LOG_FLUSH_MS = 1_000;

/**
 * The quota's circuit probes a stalled Redis 1 s after opening, doubling up to every 5 s
 * (services/gateway/src/quota/redis-circuit.ts, whose constants are not exported): a Redis that answers
 * again is seen within this.
 */
export const REDIS_CIRCUIT_MAX_BACKOFF_MS = 5_000;

/** A Redis that answers again is the quota's again: reconnected, then seen by the circuit's probe. */
export const QUOTA_ON_REDIS_AGAIN_MS = within(
  REDIS_RECONNECT_MAX_MS + REDIS_CIRCUIT_MAX_BACKOFF_MS,
);

/**
 * How long a service's shutdown may take before it gives up and exits 1: close-with-grace's delay
 * in services/shared/http-server.ts (its `graceMs`, 25 s, which it does not export), counted
 * after SHUTDOWN_DELAY_MS.
 */
export const SHUTDOWN_GRACE_MS = 25_000;

/**
 * A webhook delivery leased by a worker that died is taken up again once its lease runs out: the
 * embedded queue leases for WEBHOOK_TIMEOUT_MS and 60 s more
 * (services/catalog/src/webhooks/embedded-delivery-queue.ts, which does not export it); BullMQ's
 * lock (the timeout and 5 s) and its stalled-job check (every 5 s) give it up sooner.
 */
export function deliveryLeaseMs(webhookTimeoutMs: number): number {
  return webhookTimeoutMs + 60_000;
}
