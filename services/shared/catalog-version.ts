/**
 * Internal response header of the catalog: the catalog version an answer was computed at. The
 * catalog sets it only on answers of its response cache (shared by every key of a tier); the
 * gateway keeps such answers in its own cache and never passes the header on to clients.
 */
export const CATALOG_VERSION_HEADER = 'x-catalog-version';
