import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Readable } from 'node:stream';
import { type TSchema, Type } from '@sinclair/typebox';
import type { CatalogContext } from './catalog-context';
import { EXPORT_FORMATS, encodeExport } from '../export/export-formats';
import { ErrorBody } from '../schemas/api';
import { FullTool } from '../schemas/tool';

/** The reply is a stream: its type says so, its schema documents what the stream carries. */
const streamed = (schema: TSchema) => Type.Unsafe<Readable>(schema);

const ExportQuery = Type.Object(
  {
    format: Type.Union(
      EXPORT_FORMATS.map((f) => Type.Literal(f)),
      {
        default: 'ndjson',
        description:
          'ndjson (one tool per line, `application/x-ndjson`), json (one document, `application/json`) or csv (`text/csv`)',
      },
    ),
  },
  { additionalProperties: false },
);

/**
 * `GET /v1/export`: every tool with full data, streamed; Enterprise only
 * (docs/api.md#authentication-errors, docs/api.md#enterprise-export-and-webhooks).
 */
export const exportRoutes: FastifyPluginAsyncTypebox<CatalogContext> = async (
  app,
  { store, meta },
) => {
  app.get(
    '/export',
    {
      schema: {
        summary: 'Bulk export of every tool',
        operationId: 'exportTools',
        description:
          'Every tool with full data, ordered by name, streamed. CSV cells holding lists or ' +
          'objects carry them as JSON text. Enterprise keys only.',
        tags: ['export'],
        querystring: ExportQuery,
        response: {
          200: {
            description: 'Every tool, as the media type `format` names',
            headers: {
              'Content-Disposition': Type.String({
                description: '`attachment; filename="tool-directory.<format>"`',
              }),
            },
            content: {
              'application/x-ndjson': {
                schema: streamed(
                  Type.String({
                    description:
                      '`format=ndjson`: one tool (`PaidTool`) per line as JSON, each line ended by `\\n`; parse it line by line',
                    contentMediaType: 'application/x-ndjson',
                    contentSchema: Type.Array(FullTool),
                  }),
                ),
              },
              'application/json': {
                schema: streamed(
                  Type.Object(
                    {
                      data: Type.Array(FullTool),
                      meta: Type.Object({ total: Type.Integer(), attribution: Type.String() }),
                    },
                    { description: '`format=json`: one JSON document, every tool in `data`' },
                  ),
                ),
              },
              'text/csv': {
                schema: streamed(
                  Type.String({
                    description:
                      '`format=csv`: RFC 4180 with a header row, one column per `PaidTool` field; lists and objects as JSON text',
                    contentMediaType: 'text/csv',
                  }),
                ),
              },
            },
          },
          400: ErrorBody,
          403: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      const { format } = request.query;
      const encoded = encodeExport(format, store.exportTools(), meta.attribution);
      return reply
        .type(encoded.contentType)
        .header('content-disposition', `attachment; filename="tool-directory.${encoded.extension}"`)
        .send(encoded.body);
    },
  );
};
