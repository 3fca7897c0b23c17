import { loadTools } from '../records/dataset';
import type { CatalogStore } from './catalog-store';
import { EmbeddedStore } from './embedded-store';
import { MongoStore, type SearchEngineSetting } from './mongo-store';

/**
 * MongoDB when a URI is configured (`npm run seed` loads the bundled tools into it), otherwise
 * the embedded store under DATA_DIR, seeded from the bundled dataset at every start
 * (docs/api.md#the-system-behind-the-api).
 */
export async function createStore(settings: {
  MONGODB_URI?: string | undefined;
  MONGODB_DB: string;
  DATA_DIR: string;
  SEARCH_ENGINE?: SearchEngineSetting;
}): Promise<CatalogStore> {
  if (settings.MONGODB_URI) {
    return MongoStore.connect(settings.MONGODB_URI, settings.MONGODB_DB, {
      searchEngine: settings.SEARCH_ENGINE ?? 'auto',
    });
  }
  return new EmbeddedStore(settings.DATA_DIR, loadTools());
}
