import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Errors } from '../../../shared/errors';
import { describeAllowed } from '../../../shared/validation-message';
import type { CatalogContext } from './catalog-context';
import { formatInstant, parseDateTime } from '../records/date-time';
import {
  ErrorBody,
  ToolDetailResponse,
  ToolListQuery,
  ToolListResponse,
  ToolParams,
  tieredResponse,
} from '../schemas/api';
import { tierSerializer } from '../schemas/tier-serializer';

/** An instant parameter in the canonical form the stores compare (date-time.ts). */
function queryInstant(
  name: 'updatedSince' | 'verifiedBefore',
  text: string | undefined,
): string | undefined {
  if (text === undefined) return undefined;
  // The schema's `date-time` format has checked it: the same forms parseDateTime reads.
  const ms = parseDateTime(text);
  if (ms === undefined) {
    const allowed = describeAllowed(ToolListQuery.properties[name]);
    throw new Errors.badParameter(`Invalid query parameter '${name}': must be ${allowed}`);
  }
  return formatInstant(ms);
}

const listSerializer = tierSerializer(ToolListResponse);
const detailSerializer = tierSerializer(ToolDetailResponse);

/**
 * `GET /v1/tools` and `GET /v1/tools/{slug}` (docs/api.md#endpoints,
 * docs/api.md#parameters-and-validation, docs/api.md#response-bodies).
 */
export const toolRoutes: FastifyPluginAsyncTypebox<CatalogContext> = async (
  app,
  { store, meta },
) => {
  app.get(
    '/tools',
    {
      schema: {
        summary: 'List tools',
        operationId: 'listTools',
        description:
          'Paginated, ordered by name unless `sort` says otherwise; filter by category, words ' +
          'or the time of the last change (`updatedSince`, for syncing a copy of the catalog) ' +
          'or of the last check of the facts (`verifiedBefore`).',
        tags: ['tools'],
        querystring: ToolListQuery,
        response: { 200: tieredResponse(ToolListResponse), 400: ErrorBody },
      },
    },
    async (request, reply) => {
      const { page, limit, category, search, sort } = request.query;
      const updatedSince = queryInstant('updatedSince', request.query.updatedSince);
      const verifiedBefore = queryInstant('verifiedBefore', request.query.verifiedBefore);
      const { items, total } = await store.listTools({
        page,
        limit,
        category,
        search,
        updatedSince,
        verifiedBefore,
        sort,
      });
      listSerializer(reply, request.caller!.tier);
      return {
        data: items,
        meta: {
          total,
          page,
          limit,
          totalPages: Math.ceil(total / limit),
          attribution: meta.attribution,
        },
      };
    },
  );

  app.get(
    '/tools/:slug',
    {
      schema: {
        summary: 'One tool in detail',
        operationId: 'getTool',
        tags: ['tools'],
        params: ToolParams,
        response: { 200: tieredResponse(ToolDetailResponse), 400: ErrorBody, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const tool = await store.getTool(request.params.slug);
      if (!tool) throw new Errors.toolNotFound(request.params.slug);
      detailSerializer(reply, request.caller!.tier);
      return { data: tool, meta: { attribution: meta.attribution } };
    },
  );
};
