import type { Logger } from 'pino';
import type { Gauge } from 'prom-client';
import { INTERNAL_HEADERS, INTERNAL_PATHS } from '../../../shared/contract';
import { throttledWarning } from '../../../shared/poll-loop';
import { discard } from './catalog-answer';
import type { CatalogClient } from './catalog-client';

export interface CatalogCheckTimings {
  /** Between checks until the catalog has been ready, and while it refuses the token. */
  untilReadyMs: number;
  /** Between checks once ready: only a token rotated wrongly can make the gateway unready then. */
  whenReadyMs: number;
  /**
   * A check's own bound on the catalog's answer. `/readyz` never waits for a check, but a hung
   * catalog should not hold up the next one for the pool's UPSTREAM_TIMEOUT_MS.
   */
  timeoutMs: number;
}

/**
 * A not-ready gateway learns within a second that it can serve; a ready one within a readiness
 * probe period (the chart's is 5 s) that the catalog refuses its token. The answer's bound is
 * half the chart's probe timeout (2 s).
 */
export const CATALOG_CHECK_TIMINGS: CatalogCheckTimings = {
  untilReadyMs: 1_000,
  whenReadyMs: 5_000,
  timeoutMs: 1_000,
};

/** The `/readyz` reasons: the public port's, so they name no address and no error. */
const REASONS = {
  unreachable: 'the catalog cannot be reached yet',
  refused: "the catalog refuses this gateway's INTERNAL_TOKEN",
  notReady: (status: number) => `the catalog is not ready yet (its readiness answered ${status})`,
};

export interface CatalogReadinessOptions {
  client: CatalogClient;
  internalToken: string;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
  /** Set to 1 while the catalog refuses the token, 0 once it takes it. */
  tokenRefused: Pick<Gauge, 'set'>;
  timings?: CatalogCheckTimings;
}

export interface CatalogReadiness {
  /** Why the gateway cannot serve on the catalog's account, or undefined. Never waits. */
  problem(): string | undefined;
  stop(): void;
}

/**
 * The gateway's readiness on its upstream, kept by checks in the background so that `/readyz`
 * answers at once whatever the catalog does. Each check asks INTERNAL_PATHS.readiness with this
 * gateway's token, as its keyed requests carry it:
 *
 * - not ready until the catalog has answered 200 since this gateway started, so a gateway never
 *   takes traffic (nor spends a client's quota on a 503) before a request can succeed;
 * - not ready while the catalog answers 401, before or after being ready: every keyed request
 *   would get the catalog's 401 then (a token rotated on one side only);
 * - once ready, a catalog that cannot be reached or is not ready leaves the gateway ready: it keeps
 *   answering, with the API's JSON 503 for catalog routes, where an unready gateway would leave
 *   clients with the load balancer's own error page, and registration, the usage, the portal and
 *   the API reference down with it (docs/operations.md, "Gateway readiness").
 */
export function watchCatalogReadiness({
  client,
  internalToken,
  logger,
  tokenRefused,
  timings = CATALOG_CHECK_TIMINGS,
}: CatalogReadinessOptions): CatalogReadiness {
  let beenReady = false;
  let refused = false;
  let lastProblem = REASONS.unreachable;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const warn = throttledWarning(logger, 'asking the catalog whether it is ready failed; retrying');
  const call = {
    method: 'GET' as const,
    path: INTERNAL_PATHS.readiness,
    headers: { [INTERNAL_HEADERS.token]: internalToken },
    headersTimeout: timings.timeoutMs,
    bodyTimeout: timings.timeoutMs,
  };
  tokenRefused.set(0);

  const check = async () => {
    let status: number;
    try {
      const answer = await client.call(call);
      discard(answer);
      status = answer.statusCode;
    } catch (err) {
      lastProblem = REASONS.unreachable;
      warn(err);
      return;
    }
    if (status === 200) {
      beenReady = true;
      if (refused) logger.info("the catalog takes this gateway's INTERNAL_TOKEN again");
      refused = false;
      tokenRefused.set(0);
    } else if (status === 401) {
      // Once per refusal, not per check: the gauge says it for as long as it lasts.
      if (!refused) {
        logger.error(
          "the catalog refuses this gateway's INTERNAL_TOKEN: gateway and catalog are set to " +
            'different tokens, so every keyed request would get 401; not ready until they match',
        );
      }
      refused = true;
      tokenRefused.set(1);
    } else {
      lastProblem = REASONS.notReady(status);
      warn(new Error(`the catalog's readiness answered ${status}`));
    }
  };

  const round = async () => {
    await check();
    if (stopped) return;
    const wait = beenReady && !refused ? timings.whenReadyMs : timings.untilReadyMs;
    timer = setTimeout(() => void round(), wait).unref();
  };
  void round();

  return {
    problem: () => (refused ? REASONS.refused : beenReady ? undefined : lastProblem),
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
