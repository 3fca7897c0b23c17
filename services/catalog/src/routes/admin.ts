import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { Errors } from '../../../shared/errors';
import type { CatalogChanges } from '../changes/catalog-changes';
import { InvalidToolsError, formatProblem } from '../records/tool-validator';
import { ErrorBody, ToolParams } from '../schemas/api';

/** An import of the whole catalog at 10,000 tools stays well under this. */
const IMPORT_BODY_LIMIT = 64 * 1024 * 1024;
const TOOL_BODY_LIMIT = 1024 * 1024;

const ChangeSummary = Type.Object(
  {
    created: Type.Array(Type.String()),
    updated: Type.Array(
      Type.Object({ slug: Type.String(), changedFields: Type.Array(Type.String()) }),
    ),
    unchanged: Type.Array(Type.String()),
    deleted: Type.Array(Type.String()),
    version: Type.Integer({ description: 'The catalog version after the change' }),
    warnings: Type.Optional(
      Type.Array(Type.String(), {
        description: 'The change is stored, but something after the commit failed',
      }),
    ),
  },
  { description: 'What the change did, slug by slug' },
);

/** Records are checked by the dataset's validator, which names the record and the field. */
async function refusingInvalid<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof InvalidToolsError) {
      throw new Errors.invalidTools(err.problems.slice(0, 20).map(formatProblem).join('; '));
    }
    throw err;
  }
}

/**
 * Operator changes on the catalog's internal port (docs/api.md#catalog-changes-and-freshness),
 * registered only when ADMIN_TOKEN is set; never routed by the gateway or the ingress. Same code
 * path as `npm run catalog`.
 */
export const adminRoutes: FastifyPluginAsyncTypebox<{ changes: CatalogChanges }> = async (
  app,
  { changes },
) => {
  app.put(
    '/tools/:slug',
    {
      config: { admin: true },
      bodyLimit: TOOL_BODY_LIMIT,
      schema: {
        hide: true,
        params: ToolParams,
        body: Type.Object({}, { additionalProperties: true }),
        response: { 200: ChangeSummary, 201: ChangeSummary, 400: ErrorBody, 401: ErrorBody },
      },
    },
    async (request, reply) => {
      const { slug } = request.params;
      const record = request.body as Record<string, unknown>;
      if (record.slug !== undefined && record.slug !== slug) {
        throw new Errors.slugMismatch(String(record.slug), slug);
      }
      const summary = await refusingInvalid(() => changes.upsert([{ ...record, slug }]));
      return reply.code(summary.created.length > 0 ? 201 : 200).send(summary);
    },
  );

  app.delete(
    '/tools/:slug',
    {
      config: { admin: true },
      schema: {
        hide: true,
        params: ToolParams,
        response: { 204: Type.Null(), 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const summary = await changes.delete(request.params.slug);
      if (!summary) throw new Errors.toolNotFound(request.params.slug);
      // A 204 has no body to carry them.
      if (summary.warnings) request.log.warn({ warnings: summary.warnings }, 'tool deleted');
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/import',
    {
      config: { admin: true },
      bodyLimit: IMPORT_BODY_LIMIT,
      schema: {
        hide: true,
        body: Type.Array(Type.Unknown(), { description: 'Full tool records' }),
        response: { 200: ChangeSummary, 400: ErrorBody, 401: ErrorBody },
      },
    },
    async (request) => refusingInvalid(() => changes.upsert(request.body)),
  );
};
