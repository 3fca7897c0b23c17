import type { Logger } from 'pino';
import { INTERNAL_HEADERS, INTERNAL_PATHS } from '../../../shared/contract';
import { discard } from '../proxy/catalog-answer';
import type { CatalogClient } from '../proxy/catalog-client';
import { type Tier } from '../../../shared/tiers';
import type { Clock } from './daily-window';
import type { QuotaDecision } from './quota-limiter';

export interface QuotaWarningOptions {
  catalog: CatalogClient;
  internalToken: string;
  clock: Clock;
  logger: Pick<Logger, 'warn'>;
}

/** A report the catalog did not take is tried again on a later request, not sooner. */
const RETRY_AFTER_MS = 60_000;
const LOG_EVERY_MS = 60_000;

/** The used count at which a key has passed 80% of its quota: ceil(0.8 × limit), in integers. */
export function warningThreshold(limit: number): number {
  return Math.ceil((4 * limit) / 5);
}

/**
 * The gateway's half of the `quota.warning` webhook (docs/api.md#enterprise-export-and-webhooks,
 * docs/api.md#webhook-events-and-deliveries): an admitted request of an Enterprise key that has
 * used 80% of its daily quota or more is reported to the catalog, which owns the subscriptions and
 * enqueues the events. The report is fire-and-forget: never awaited by the request, never thrown
 * into it, failures logged at most once a minute.
 *
 * Each replica reports a key once a day (the first request at or past the threshold that it
 * admits: the crossing itself, or the first after a restart); the catalog makes one event of
 * the reports of every replica by its id. A report that failed is made again by a later
 * request, a minute on at the earliest. Below the threshold `observe` only does arithmetic.
 */
export class QuotaWarnings {
  /** Keys reported (or being reported) in the quota window `day`; else when to try again. */
  private readonly reported = new Map<string, number>();
  private day = 0;
  private readonly inFlight = new Set<Promise<void>>();
  private lastLogged = -Infinity;

  constructor(private readonly options: QuotaWarningOptions) {}

  /** Called with every admitted request's quota decision. */
  observe(keyId: string, tier: Tier, decision: QuotaDecision): void {
    const { limit, remaining, resetAt } = decision;
    // Only Enterprise keys may subscribe to webhooks (docs/api.md#enterprise-export-and-webhooks).
    if (tier !== 'enterprise' || limit - remaining < warningThreshold(limit)) return;
    if (resetAt !== this.day) {
      this.day = resetAt;
      this.reported.clear();
    }
    const retryAt = this.reported.get(keyId);
    if (retryAt !== undefined && this.options.clock() < retryAt) return;
    this.reported.set(keyId, Infinity);
    const sent = this.send(keyId, tier, decision).catch((err: unknown) => {
      this.reported.set(keyId, this.options.clock() + RETRY_AFTER_MS);
      this.logFailure(err);
    });
    this.inFlight.add(sent);
    void sent.finally(() => this.inFlight.delete(sent));
  }

  private async send(keyId: string, tier: Tier, decision: QuotaDecision): Promise<void> {
    const { catalog, internalToken, clock } = this.options;
    const answer = await catalog.call({
      method: 'POST',
      path: INTERNAL_PATHS.quotaWarnings,
      headers: {
        'content-type': 'application/json',
        [INTERNAL_HEADERS.token]: internalToken,
        [INTERNAL_HEADERS.tier]: tier,
        [INTERNAL_HEADERS.keyId]: keyId,
      },
      body: Buffer.from(
        JSON.stringify({
          limit: decision.limit,
          remaining: decision.remaining,
          resetAt: new Date(decision.resetAt * 1000).toISOString(),
          at: new Date(clock()).toISOString(),
        }),
      ),
    });
    discard(answer);
    if (answer.statusCode !== 202) throw new Error(`the catalog answered ${answer.statusCode}`);
  }

  private logFailure(err: unknown): void {
    const now = this.options.clock();
    if (now - this.lastLogged < LOG_EVERY_MS) return;
    this.lastLogged = now;
    this.options.logger.warn(
      { err },
      'quota warning not handed to the catalog; a later request retries',
    );
  }

  /** Waits for the reports under way (each bounded by the timeout). */
  async close(): Promise<void> {
    await Promise.allSettled(this.inFlight);
  }
}
