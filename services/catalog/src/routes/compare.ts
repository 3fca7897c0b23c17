import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Errors } from '../../../shared/errors';
import type { CatalogContext } from './catalog-context';
import { compareTools } from '../records/comparison';
import { CompareParams, CompareResponse, ErrorBody } from '../schemas/api';

/**
 * `GET /v1/compare/{tool1}/{tool2}`: Pro and Enterprise only (docs/api.md#comparison,
 * docs/api.md#authentication-errors, docs/api.md#response-bodies).
 */
export const compareRoutes: FastifyPluginAsyncTypebox<CatalogContext> = async (
  app,
  { store, meta },
) => {
  app.get(
    '/compare/:tool1/:tool2',
    {
      schema: {
        summary: 'Compare two tools side by side',
        operationId: 'compareTools',
        tags: ['compare'],
        params: CompareParams,
        response: { 200: CompareResponse, 400: ErrorBody, 403: ErrorBody, 404: ErrorBody },
      },
    },
    async (request) => {
      const { tool1, tool2 } = request.params;
      if (tool1 === tool2) throw new Errors.sameTool(tool1);
      const [a, b] = await Promise.all([store.getTool(tool1), store.getTool(tool2)]);
      if (!a) throw new Errors.toolNotFound(tool1);
      if (!b) throw new Errors.toolNotFound(tool2);
      return {
        data: { tools: [a, b], comparison: compareTools(a, b) },
        meta: { attribution: meta.attribution },
      };
    },
  );
};
