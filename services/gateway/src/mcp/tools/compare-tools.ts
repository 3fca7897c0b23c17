import { CompareParams, CompareResponse } from '../../../../catalog/src/schemas/api';
import {
  type CatalogTool,
  type ToolSummary,
  answerOf,
  argumentsOf,
  lines,
  mirroredRoute,
  segment,
  toolLine,
} from '../catalog-tool';

interface Comparison {
  tools: [ToolSummary, ToolSummary];
  comparison: { ratingDifference: number; sameCategory: boolean; sharedTags: string[] };
}

/** Two records side by side: `GET /v1/compare/:tool1/:tool2`, a route of paid tiers. */
export const compareTools: CatalogTool = {
  name: 'compare_tools',
  title: 'Compare two tools',
  description:
    'Two tools side by side, by their slugs: both full records, the rating difference, shared and unique tags, whether the category is the same, both pricing summaries.',
  purpose: 'compares two',
  route: mirroredRoute('/v1/compare/:tool1/:tool2'),
  input: argumentsOf(CompareParams),
  output: answerOf(CompareResponse),
  path: (args) => `/v1/compare/${segment(args.tool1)}/${segment(args.tool2)}`,
  text: (body) => {
    const {
      tools: [a, b],
      comparison: { ratingDifference, sameCategory, sharedTags },
    } = body.data as Comparison;
    const rated =
      ratingDifference === 0
        ? 'rated the same'
        : `${(ratingDifference > 0 ? a : b).name} rated ${Math.abs(ratingDifference)} higher`;
    return lines(
      `${a.name} vs ${b.name}: ${rated}, ${sameCategory ? 'same category' : 'different categories'}, shared tags: ${sharedTags.join(', ') || 'none'}`,
      [toolLine(a), toolLine(b)],
    );
  },
};
