import type { DatasetMeta } from '../records/dataset';
import type { CatalogStore } from '../store/catalog-store';

/** What the catalog's routes are given: the store and the dataset's metadata. */
export interface CatalogContext {
  store: CatalogStore;
  meta: Pick<DatasetMeta, 'attribution'>;
  /** How long `GET /v1/changes` keeps a change (CHANGES_RETENTION_DAYS). */
  changesRetentionDays: number;
}
