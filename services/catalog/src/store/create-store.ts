import type { Tool } from '../schemas/tool';
import type { CatalogStore } from './catalog-store';
import { EmbeddedStore } from './embedded-store';
import { MongoStore } from './mongo-store';

/** MongoDB when a URI is configured, otherwise the bundled dataset in memory (SPEC B1). */
export async function createStore(
  settings: { MONGODB_URI?: string | undefined; MONGODB_DB: string },
  bundledTools: () => readonly Tool[],
): Promise<CatalogStore> {
  if (settings.MONGODB_URI) return MongoStore.connect(settings.MONGODB_URI, settings.MONGODB_DB);
  return new EmbeddedStore(bundledTools());
}
