import type { Category } from '../../../../catalog/src/schemas/tool';
import { type CatalogTool, NO_ARGUMENTS, argumentsOf, lines, mirroredRoute } from '../catalog-tool';
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
  path: () => '/v1/categories',
  text: (body) =>
    lines(
      `${String(body.meta.total)} categories:`,
      (body.data as Category[]).map((c) => `- ${c.name} (${c.slug}): ${c.toolCount} tools`),
    ),
};
