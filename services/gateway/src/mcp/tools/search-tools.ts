import { SearchQuery, SearchResponse } from '../../../../catalog/src/schemas/api';
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

/** Full-text search: `GET /v1/search`. */
export const searchTools: CatalogTool = {
  name: 'search_tools',
  title: 'Search the catalog',
  description:
    'Full-text search over AI tools, frameworks and platforms: best match first, typos and synonyms forgiven, optionally within one category. Returns the records (Free keys: the basic fields) with a relevance score, the total and the matches per category.',
  purpose: 'finds tools by words, best match first',
  route: mirroredRoute('/v1/search'),
  input: argumentsOf(SearchQuery),
  output: answerOf(SearchResponse),
  path: (args) => `/v1/search${query(args)}`,
  text: (body, args) => {
    const tools = body.data as ToolSummary[];
    return lines(
      `${String(body.meta.total)} matches for "${String(args.q)}", ${tools.length} shown:`,
      tools.map(toolLine),
    );
  },
};
