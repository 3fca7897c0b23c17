import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Errors } from '../../../shared/errors';
import type { Tier } from '../../../shared/tiers';
import { ErrorBody, HistoryResponse, ToolParams } from '../schemas/api';
import { tierSees } from '../schemas/tier-serializer';
import type { FieldChanges, HistoryEntry } from '../store/tool-history';
import type { CatalogContext } from './catalog-context';

/** A history entry as a tier sees it: only the fields of its records. */
function asSeenBy(tier: Tier, { at, type, changes }: HistoryEntry) {
  const seen: FieldChanges = {};
  for (const field in changes) if (tierSees(tier, field)) seen[field] = changes[field]!;
  return { at, type, changes: seen };
}

/**
 * `GET /v1/tools/{slug}/history` (docs/api.md#staying-in-sync): a record's changes, newest
 * first, field by field; a deleted tool keeps its history, a slug never held is a 404.
 */
export const toolHistoryRoutes: FastifyPluginAsyncTypebox<CatalogContext> = async (
  app,
  { store, meta },
) => {
  app.get(
    '/tools/:slug/history',
    {
      schema: {
        summary: "A tool's history",
        operationId: 'getToolHistory',
        description:
          'Every change of one record, newest first, with each field before and after (only ' +
          "the fields the caller's tier sees). A deleted tool keeps its history.",
        tags: ['tools'],
        params: ToolParams,
        response: { 200: HistoryResponse, 400: ErrorBody, 404: ErrorBody },
      },
    },
    async (request) => {
      const { slug } = request.params;
      const history = await store.toolHistory(slug);
      if (!history) throw new Errors.toolNotFound(slug);
      const tier = request.caller!.tier;
      return {
        data: history.map((entry) => asSeenBy(tier, entry)),
        meta: { slug, total: history.length, attribution: meta.attribution },
      };
    },
  );
};
