import { ToolListQuery, ToolListResponse } from '../../../../catalog/src/schemas/api';
import {
  type CatalogTool,
  type ToolSummary,
  answerOf,
  argumentsOf,
  lines,
  mirroredRoute,
  query,
  toolLine,
} from '../catalog-tool';

/** The catalog page by page: `GET /v1/tools` (its filters for syncing are REST's alone). */
export const listTools: CatalogTool = {
  name: 'list_tools',
  title: 'List tools',
  description:
    'Tools page by page, optionally in one category, ordered by name (default), rating or time of last change.',
  purpose: 'lists tools page by page, optionally in one category',
  route: mirroredRoute('/v1/tools'),
  input: argumentsOf(ToolListQuery, ['category', 'page', 'limit', 'sort']),
  output: answerOf(ToolListResponse),
  path: (args) => `/v1/tools${query(args)}`,
  text: (body) => {
    const { page, totalPages, total } = body.meta;
    return lines(
      `Page ${String(page)} of ${String(totalPages)} (${String(total)} tools):`,
      (body.data as ToolSummary[]).map(toolLine),
    );
  },
};
