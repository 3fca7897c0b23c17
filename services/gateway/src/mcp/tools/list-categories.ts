import type { Category } from '../../../../catalog/src/schemas/tool';
import { CategoryListResponse } from '../../../../catalog/src/schemas/api';
import {
  type CatalogTool,
  NO_ARGUMENTS,
  answerOf,
  argumentsOf,
  lines,
  mirroredRoute,
} from '../catalog-tool';
import { listTools } from './list-tools';
import { searchTools } from './search-tools';

/** The categories and their tool counts: `GET /v1/categories`. */
export const listCategories: CatalogTool = {
  name: 'list_categories',
  title: 'List the categories',
  description: `Every category with its name, slug and number of tools: the values ${listTools.name} and ${searchTools.name} take as category.`,
  purpose: 'gives the categories',
  route: mirroredRoute('/v1/categories'),
  input: argumentsOf(NO_ARGUMENTS),
  output: answerOf(CategoryListResponse),
  path: () => '/v1/categories',
  text: (body) =>
    lines(
      `${String(body.meta.total)} categories:`,
      (body.data as Category[]).map((c) => `- ${c.name} (${c.slug}): ${c.toolCount} tools`),
    ),
};
