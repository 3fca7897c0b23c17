import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { CatalogContext } from './catalog-context';
import { CategoryListResponse } from '../schemas/api';

/** `GET /v1/categories` (docs/api.md#categories). */
export const categoryRoutes: FastifyPluginAsyncTypebox<CatalogContext> = async (
  app,
  { store, meta },
) => {
  app.get(
    '/categories',
    {
      schema: {
        summary: 'All categories with tool counts',
        operationId: 'listCategories',
        tags: ['categories'],
        response: { 200: CategoryListResponse },
      },
    },
    async () => {
      const categories = await store.listCategories();
      return {
        data: categories,
        meta: { total: categories.length, attribution: meta.attribution },
      };
    },
  );
};
