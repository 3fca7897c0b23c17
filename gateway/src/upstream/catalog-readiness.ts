import { discard } from './catalog-answer';
import type { CatalogClient } from './catalog-client';

/** A catalog found not ready is asked again at most this often, however often /readyz is. */
const RECHECK_MS = 500;

/**
 * The gateway's readiness gate on its upstream: not ready until the catalog has answered its own
 * `/readyz` since this gateway started, so a gateway never takes traffic (nor spends a client's
 * quota on a 503) before a request can succeed; `npm start` and a pod alike. Once the catalog has
 * been ready, a later catalog outage does not make the gateway unready: it keeps answering, with
 * the API's JSON 503 for catalog routes, where an unready gateway would leave clients with the
 * load balancer's own error page, and registration, the portal and the API reference down with it
 * (docs/operations.md, "Readiness").
 */
export function catalogReadiness(client: CatalogClient): () => Promise<void> {
  let ready = false;
  let asking: Promise<void> | undefined;
  let lastAsked = 0;
  let lastProblem = 'the catalog has not been asked yet';

  const ask = async () => {
    lastAsked = Date.now();
    try {
      const answer = await client.call({ method: 'GET', path: '/readyz', headers: {} });
      discard(answer);
      if (answer.statusCode === 200) ready = true;
      else lastProblem = `the catalog is not ready yet (its /readyz answered ${answer.statusCode})`;
    } catch {
      lastProblem = 'the catalog cannot be reached yet';
    }
  };

  return async () => {
    if (ready) return;
    if (Date.now() - lastAsked >= RECHECK_MS) {
      asking ??= ask().finally(() => (asking = undefined));
    }
    await asking;
    if (!ready) throw new Error(lastProblem);
  };
}
