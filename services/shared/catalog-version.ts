/**
 * Internal response header of the catalog: the catalog version an answer was computed at. The
 * catalog sets it only on answers of its response cache (shared by every key of a tier); the
 * gateway keeps such answers in its own cache and never passes the header on to clients.
 */
export const CATALOG_VERSION_HEADER = 'x-catalog-version';

/**
 * The catalog's internal endpoint of its current version, which every gateway polls: its
 * response cache then follows catalog changes within a second whatever happened to their
 * announcement on the change feed.
 */
export const CATALOG_VERSION_PATH = '/internal/v1/catalog-version';
