import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { CatalogContext } from './catalog-context';
import { categoryRoutes } from './categories';
import { changeRoutes } from './changes';
import { compareRoutes } from './compare';
import { exportRoutes } from './export';
import { searchRoutes } from './search';
import { toolHistoryRoutes } from './tool-history';
import { toolRoutes } from './tools';

/** Every public route of the catalog; registered under `/v1`. */
export const catalogRoutes: FastifyPluginAsyncTypebox<CatalogContext> = async (
  v1,
  { store, meta, changesRetentionDays },
) => {
  // Not the options themselves: they carry this plugin's prefix.
  const context: CatalogContext = { store, meta, changesRetentionDays };
  await v1.register(toolRoutes, context);
  await v1.register(toolHistoryRoutes, context);
  await v1.register(changeRoutes, context);
  await v1.register(categoryRoutes, context);
  await v1.register(searchRoutes, context);
  await v1.register(compareRoutes, context);
  await v1.register(exportRoutes, context);
};
