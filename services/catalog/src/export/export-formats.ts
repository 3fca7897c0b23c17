import { Readable, pipeline } from 'node:stream';
import { stringify } from 'csv-stringify';
import fastJson from 'fast-json-stringify';
import { FullTool, type Tool } from '../schemas/tool';

export const EXPORT_FORMATS = ['ndjson', 'json', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Every record is written by the full Tool schema's serializer: exactly the schema's fields. */
const serializeTool = fastJson(FullTool);

/**
 * The export's columns: the Tool schema's fields in schema order (the basic fields, provenance
 * included, `updatedAt`, then the paid ones; docs/api.md#the-tool-record).
 */
export const CSV_COLUMNS = Object.keys(FullTool.properties);

async function* ndjson(tools: AsyncIterable<Tool>) {
  for await (const tool of tools) yield `${serializeTool(tool)}\n`;
}

/** The usual envelope, written as the records come: `meta` follows `data`, once it is known. */
async function* jsonEnvelope(tools: AsyncIterable<Tool>, attribution: string) {
  let total = 0;
  yield '{"data":[';
  for await (const tool of tools) {
    yield total === 0 ? serializeTool(tool) : `,${serializeTool(tool)}`;
    total += 1;
  }
  yield `],"meta":${JSON.stringify({ total, attribution })}}`;
}

/**
 * RFC 4180 CSV with a header row. Cells holding lists or objects (tags, pricing tiers, security,
 * …) carry them as JSON text, so the file loses nothing and a spreadsheet still shows them.
 */
function csv(tools: AsyncIterable<Tool>): Readable {
  const rows = stringify({
    header: true,
    columns: CSV_COLUMNS,
    cast: { object: (value) => JSON.stringify(value), boolean: (value) => String(value) },
  });
  // A failing store ends the response early instead of leaving it hanging.
  pipeline(Readable.from(tools), rows, () => undefined);
  return rows;
}

export interface EncodedExport {
  contentType: string;
  extension: string;
  body: Readable;
}

/**
 * Streams every tool in the requested format (docs/api.md#enterprise-export-and-webhooks), never
 * holding the catalog in memory.
 */
export function encodeExport(
  format: ExportFormat,
  tools: AsyncIterable<Tool>,
  attribution: string,
): EncodedExport {
  switch (format) {
    case 'ndjson':
      return {
        contentType: 'application/x-ndjson; charset=utf-8',
        extension: 'ndjson',
        body: Readable.from(ndjson(tools)),
      };
    case 'json':
      return {
        contentType: 'application/json; charset=utf-8',
        extension: 'json',
        body: Readable.from(jsonEnvelope(tools, attribution)),
      };
    case 'csv':
      return { contentType: 'text/csv; charset=utf-8', extension: 'csv', body: csv(tools) };
  }
}
