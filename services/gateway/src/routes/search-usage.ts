import { type Static, Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody } from '../../../shared/openapi';
import type { SearchRecorder } from '../analytics/search-recorder';
import {
  REPORT_SIZE,
  SEARCH_ANALYTICS_RETENTION_DAYS,
  type SearchAnalyticsStore,
} from '../analytics/search-analytics-store';

const DAY_MS = 86_400_000;

const QueryCount = Type.Object({
  query: Type.String({ description: 'Trimmed, spaces collapsed, lower-cased' }),
  count: Type.Integer({ minimum: 1 }),
  lastAt: Type.String({ format: 'date-time' }),
});

const SearchUsage = Type.Object(
  {
    data: Type.Object({
      days: Type.Integer({ description: 'The UTC days counted, today included' }),
      top: Type.Array(QueryCount, {
        maxItems: REPORT_SIZE,
        description: 'The most frequent queries, most first',
      }),
      noHit: Type.Array(QueryCount, {
        maxItems: REPORT_SIZE,
        description: 'The most frequent queries that found nothing (count: those searches)',
      }),
      totals: Type.Object({
        searches: Type.Integer({ minimum: 0 }),
        noHits: Type.Integer({ minimum: 0 }),
      }),
      recording: Type.Boolean({
        description: 'Whether searches are counted now (SEARCH_ANALYTICS); false: none are kept',
      }),
    }),
    meta: Type.Object({ attribution: Type.String() }),
  },
  { $id: 'SearchUsage', description: "The calling key's searches" },
);

const SearchUsageQuery = Type.Object(
  {
    days: Type.Integer({
      minimum: 1,
      maximum: SEARCH_ANALYTICS_RETENTION_DAYS,
      default: SEARCH_ANALYTICS_RETENTION_DAYS,
      description: 'The last n UTC days, today included',
    }),
  },
  { additionalProperties: false },
);

export interface SearchUsageOptions {
  store: SearchAnalyticsStore;
  /** This replica's counting; undefined when SEARCH_ANALYTICS=off. */
  recorder: SearchRecorder | undefined;
  attribution: string;
}

/**
 * `GET /v1/usage/searches` (docs/api.md#search-analytics): the calling key's most frequent
 * queries and those that found nothing, over the last `days`. Free of quota, as `/v1/usage`; a
 * key reads only its own. What this replica counted is written first, so a key sees its own
 * searches at once here, and every replica's within SEARCH_ANALYTICS_FLUSH_MS.
 */
export const searchUsageRoutes: FastifyPluginAsyncTypebox<SearchUsageOptions> = async (
  app,
  { store, recorder, attribution },
) => {
  app.get(
    '/v1/usage/searches',
    {
      config: { quotaCost: 0, scope: 'usage' },
      schema: {
        summary: "The calling key's searches",
        operationId: 'getSearchUsage',
        description:
          'The most frequent queries of this key and those that found nothing, from REST `/v1/search` and the MCP tool that mirrors it, over the last `days` UTC days (kept 30). Takes no unit of the quota.',
        tags: ['keys'],
        querystring: SearchUsageQuery,
        response: { 200: SearchUsage, 400: ErrorBody, 401: ErrorBody, 429: ErrorBody },
      },
    },
    async (request): Promise<Static<typeof SearchUsage>> => {
      const { days } = request.query;
      await recorder?.flush();
      const now = Date.now();
      const fromDay = new Date(now - (now % DAY_MS) - (days - 1) * DAY_MS)
        .toISOString()
        .slice(0, 10);
      const report = await store.ofKey(request.caller!.keyId, fromDay);
      return {
        data: { days, ...report, recording: recorder !== undefined },
        meta: { attribution },
      };
    },
  );
};
