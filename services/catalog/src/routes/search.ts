import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { CatalogContext } from '../catalog-context';
import { ErrorBody, SearchQuery, SearchResponse, tieredResponse } from '../schemas/api';
import { tierSerializer } from '../tier-serializer';

const searchSerializer = tierSerializer(SearchResponse);

/** `GET /v1/search` (SPEC A 4.4, B6): full-text search, best match first. */
export const searchRoutes: FastifyPluginAsyncTypebox<CatalogContext> = async (
  app,
  { store, meta },
) => {
  app.get(
    '/search',
    {
      config: { cacheable: true },
      schema: {
        summary: 'Full-text search',
        operationId: 'searchTools',
        description:
          'Name matches outrank tags and category, which outrank description; word prefixes match; an exact name comes first.',
        tags: ['search'],
        querystring: SearchQuery,
        response: { 200: tieredResponse(SearchResponse), 400: ErrorBody },
      },
    },
    async (request, reply) => {
      const { q: query, limit } = request.query;
      const { items, total } = await store.search(query, limit);
      searchSerializer(reply, request.caller!.tier);
      return { data: items, meta: { total, limit, query, attribution: meta.attribution } };
    },
  );
};
