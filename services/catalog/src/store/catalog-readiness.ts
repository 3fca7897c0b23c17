import type { CatalogReader } from './catalog-store';

/** The `/readyz` reason of a catalog that holds no tool and never did. */
export const NOT_SEEDED =
  'the catalog has not been seeded: run `npm run seed` against its MongoDB ' +
  "(the Helm chart's seed Job does, before the catalog starts)";

/**
 * Ready when the store answers and holds a catalog, so that no traffic reaches an empty one
 * (docs/operations.md, "Readiness"). A version above 0 says a tool was written once (a seed, an
 * import), even if operators deleted every tool since; a live tool at version 0 was stored
 * before the store recorded versions. Once seeded the check costs the ping alone.
 */
export function catalogReadiness(store: CatalogReader): () => Promise<void> {
  return async () => {
    await store.ping();
    if (store.version > 0 || (await store.refresh()) > 0) return;
    const { total } = await store.listTools({ page: 1, limit: 1, sort: 'name' });
    if (total === 0) throw new Error(NOT_SEEDED);
  };
}
