import { loadTools } from '../dataset';
import type { CatalogStore } from './catalog-store';
import { EmbeddedStore } from './embedded-store';
import { MongoStore } from './mongo-store';

/**
 * MongoDB when a URI is configured, otherwise the bundled dataset in memory (SPEC B1). The
 * bundled tools are read only in the second case.
 */
export async function createStore(settings: {
  MONGODB_URI?: string | undefined;
  MONGODB_DB: string;
}): Promise<CatalogStore> {
  if (settings.MONGODB_URI) return MongoStore.connect(settings.MONGODB_URI, settings.MONGODB_DB);
  return new EmbeddedStore(loadTools());
}
