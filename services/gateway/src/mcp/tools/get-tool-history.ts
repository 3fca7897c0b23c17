import { HistoryResponse, ToolParams } from '../../../../catalog/src/schemas/api';
import {
  type CatalogTool,
  answerOf,
  argumentsOf,
  lines,
  mirroredRoute,
  segment,
} from '../catalog-tool';
import { getTool } from './get-tool';

interface HistoryLine {
  at: string;
  type: string;
  changes: Record<string, { from: unknown; to: unknown }>;
}

/** A value as one line of text shows it: short values whole, long ones cut. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}

/** One tool's changes, newest first: `GET /v1/tools/:slug/history`. */
export const getToolHistory: CatalogTool = {
  name: 'get_tool_history',
  title: "Get a tool's history",
  description: `Every change of one tool (by the slug ${getTool.name} takes), newest first: when it was created, updated or deleted, and each field before and after, such as how its pricing changed. A deleted tool keeps its history. Free keys see the changes of the Free fields.`,
  purpose: 'tells how one changed over time',
  route: mirroredRoute('/v1/tools/:slug/history'),
  input: argumentsOf(ToolParams),
  output: answerOf(HistoryResponse),
  path: (args) => `/v1/tools/${segment(args.slug)}/history`,
  text: (body) =>
    lines(
      `${String(body.meta.total)} changes of ${String(body.meta.slug)}, newest first:`,
      (body.data as HistoryLine[]).map((entry) => {
        const fields = Object.entries(entry.changes).map(([field, { from, to }]) =>
          entry.type === 'tool.created'
            ? `${field}=${shown(to)}`
            : `${field}: ${shown(from)} -> ${shown(to)}`,
        );
        return `- ${entry.at} ${entry.type}${fields.length > 0 ? `: ${fields.join('; ')}` : ''}`;
      }),
    ),
};
