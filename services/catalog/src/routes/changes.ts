import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Errors } from '../../../shared/errors';
import { decodeCursor, encodeCursor } from '../changes/change-cursor';
import { formatInstant } from '../records/date-time';
import { ChangeListResponse, ChangesQuery, ErrorBody, tieredResponse } from '../schemas/api';
import { tierSerializer } from '../schemas/tier-serializer';
import type { OutboxEntry } from '../store/catalog-store';
import type { CatalogContext } from './catalog-context';

const DAY_MS = 24 * 60 * 60 * 1000;

/** An outbox entry as the change log shows it; the tier's serializer drops the fields it hides. */
function change(entry: OutboxEntry) {
  const { version, type, slug, at } = entry;
  const cursor = encodeCursor(version);
  if (entry.type === 'tool.deleted') return { cursor, type, slug, at };
  if (entry.type === 'tool.created') return { cursor, type, slug, at, tool: entry.tool };
  return { cursor, type, slug, at, changedFields: entry.changedFields, tool: entry.tool };
}

const serializer = tierSerializer(ChangeListResponse);

/**
 * `GET /v1/changes` (docs/api.md#staying-in-sync): every change of the catalog in commit order,
 * from the outbox, for CHANGES_RETENTION_DAYS. Never cached: retention moves with the clock.
 */
export const changeRoutes: FastifyPluginAsyncTypebox<CatalogContext> = async (
  app,
  { store, meta, changesRetentionDays },
) => {
  const retentionMs = changesRetentionDays * DAY_MS;
  app.get(
    '/changes',
    {
      schema: {
        summary: 'The change log: every change, in commit order',
        operationId: 'listChanges',
        description:
          'Created, updated and deleted tools, oldest first, from the cursor `since` on. Follow ' +
          '`meta.nextCursor` until `hasMore` is false; keep the last cursor and ask again later. ' +
          'A cursor older than the retention gets 410: resynchronise, then start again.',
        tags: ['changes'],
        querystring: ChangesQuery,
        response: {
          200: tieredResponse(ChangeListResponse),
          400: ErrorBody,
          410: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      const { since, limit } = request.query;
      const after = since === undefined ? undefined : decodeCursor(since);
      const keptFrom = formatInstant(Date.now() - retentionMs);
      // One more than asked: whether more follow, without another read.
      const page = await store.changeLog({ after, keptFrom, limit: limit + 1 });
      if (page.gone) throw new Errors.changesGone(String(changesRetentionDays));
      const entries = page.entries.slice(0, limit);
      // An empty page moves the cursor to the latest version: nothing before it is left to read.
      const next = entries.at(-1)?.version ?? Math.max(page.after, page.latest);
      serializer(reply, request.caller!.tier);
      return {
        data: entries.map(change),
        meta: {
          nextCursor: encodeCursor(next),
          hasMore: page.entries.length > limit,
          attribution: meta.attribution,
        },
      };
    },
  );
};
