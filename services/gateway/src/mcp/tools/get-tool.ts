import { ToolDetailResponse, ToolParams } from '../../../../catalog/src/schemas/api';
import {
  type CatalogTool,
  type ToolSummary,
  answerOf,
  argumentsOf,
  mirroredRoute,
  segment,
} from '../catalog-tool';
import { listTools } from './list-tools';
import { searchTools } from './search-tools';

/** One record by its slug: `GET /v1/tools/:slug`. */
export const getTool: CatalogTool = {
  name: 'get_tool',
  title: 'Get one tool',
  description: `One tool by its slug (as ${searchTools.name} and ${listTools.name} give it). Pro and Enterprise keys get the full record: long description, getting started, features, pricing tiers, integrations, security, pros and cons, reviews.`,
  purpose: 'reads one by its slug',
  route: mirroredRoute('/v1/tools/:slug'),
  input: argumentsOf(ToolParams),
  output: answerOf(ToolDetailResponse),
  path: (args) => `/v1/tools/${segment(args.slug)}`,
  text: (body) => {
    const tool = body.data as ToolSummary;
    return `${tool.name} (${tool.slug}), ${tool.category}, rated ${tool.rating}/5, ${tool.pricing}, ${tool.website}\n${tool.description}`;
  },
};
