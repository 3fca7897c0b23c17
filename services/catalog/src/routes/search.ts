import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { CatalogContext } from './catalog-context';
import { ErrorBody, SearchQuery, SearchResponse, tieredResponse } from '../schemas/api';
import { tierSerializer } from '../schemas/tier-serializer';

const searchSerializer = tierSerializer(SearchResponse);

/**
 * `GET /v1/search` (docs/api.md#search, docs/api.md#response-bodies): full-text search, best match
 * first, with facets.
 */
export const searchRoutes: FastifyPluginAsyncTypebox<CatalogContext> = async (
  app,
  { store, meta },
) => {
  app.get(
    '/search',
    {
      schema: {
        summary: 'Full-text search',
        operationId: 'searchTools',
        description:
          'An exact name comes first; then the hits matching more of the words; exact and prefix matches outrank typo matches; name matches outrank tags and category, which outrank description. `category` narrows the matches; `meta.facets.category` counts the matches of every category before it.',
        tags: ['search'],
        querystring: SearchQuery,
        response: { 200: tieredResponse(SearchResponse), 400: ErrorBody },
      },
    },
    async (request, reply) => {
      const { q: query, limit, category } = request.query;
      const { items, total, facets } = await store.search({ text: query, limit, category });
      searchSerializer(reply, request.caller!.tier);
      return {
        data: items,
        meta: { total, limit, query, category, facets, attribution: meta.attribution },
      };
    },
  );
};
