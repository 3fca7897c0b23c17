import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import { z } from 'zod';
import {
  CompareParams,
  SearchQuery,
  ToolListQuery,
  ToolParams,
} from '../../../catalog/src/schemas/api';
import { type CatalogRoute, catalogRoute } from '../../../shared/contract';
import { VALIDATOR_ONLY_KEYWORDS } from '../../../shared/trimmed-fields';
import {
  type CatalogAnswerBody,
  categoriesText,
  comparisonText,
  searchText,
  toolPageText,
  toolText,
} from './tool-text';

/** An MCP tool: a read of one catalog route, its arguments that route's parameters. */
export interface CatalogTool {
  name: string;
  title: string;
  description: string;
  /** The route it mirrors: its tier, its cache, and the label of its catalog calls. */
  route: CatalogRoute;
  /** Its arguments, checked by the SDK before the tool runs (a tool error otherwise). */
  input: z.ZodObject;
  /** The catalog path and query asked for these (checked) arguments. */
  path(args: Record<string, unknown>): string;
  /** A short text rendering of the catalog's answer, next to it as structured content. */
  text(body: CatalogAnswerBody, args: Record<string, unknown>): string;
}

/**
 * A REST route's parameters as a tool's arguments, from the schema the catalog validates them
 * with: the same names, bounds, choices and descriptions, so the two cannot drift apart. What
 * only a query string needs is left out (the `allOf` against Ajv's coercion of non-finite
 * numbers, the validator's own keywords such as `transform`: the catalog still trims), and a
 * parameter with a default is optional to the caller. Unknown arguments are refused, as unknown
 * query parameters are.
 */
function argumentsOf(schema: TObject, names: readonly string[] = Object.keys(schema.properties)) {
  const properties: Record<string, TSchema> = {};
  for (const name of names) {
    const copy = JSON.parse(JSON.stringify(schema.properties[name])) as TSchema;
    delete copy.allOf;
    for (const keyword of VALIDATOR_ONLY_KEYWORDS) delete copy[keyword];
    properties[name] = copy;
  }
  const required = (schema.required ?? []).filter(
    (name) => names.includes(name) && schema.properties[name]?.default === undefined,
  );
  return z.fromJSONSchema({
    type: 'object',
    properties,
    required,
    additionalProperties: false,
  } as z.core.JSONSchema.JSONSchema) as z.ZodObject;
}

/** The query string of the arguments given, in the order given. */
function query(args: Record<string, unknown>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(args)) {
    if (value !== undefined) search.set(name, String(value));
  }
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}

const slug = (value: unknown) => encodeURIComponent(String(value));

function route(url: string): CatalogRoute {
  const entry = catalogRoute('GET', url);
  if (entry === undefined) throw new Error(`no catalog route GET ${url}`);
  return entry;
}

/**
 * The read-only tools of the MCP endpoint (docs/api.md#mcp-for-ai-agents), in the order
 * `tools/list` gives them.
 */
export const CATALOG_TOOLS: readonly CatalogTool[] = [
  {
    name: 'search_tools',
    title: 'Search the catalog',
    description:
      'Full-text search over AI tools, frameworks and platforms: best match first, typos and synonyms forgiven, optionally within one category. Returns the records (Free keys: the basic fields) with a relevance score, the total and the matches per category.',
    route: route('/v1/search'),
    input: argumentsOf(SearchQuery),
    path: (args) => `/v1/search${query(args)}`,
    text: (body, args) => searchText(body, String(args.q)),
  },
  {
    name: 'get_tool',
    title: 'Get one tool',
    description:
      'One tool by its slug (as search_tools and list_tools give it). Pro and Enterprise keys get the full record: long description, getting started, features, pricing tiers, integrations, security, pros and cons, reviews.',
    route: route('/v1/tools/:slug'),
    input: argumentsOf(ToolParams),
    path: (args) => `/v1/tools/${slug(args.slug)}`,
    text: toolText,
  },
  {
    name: 'list_categories',
    title: 'List the categories',
    description:
      'Every category with its name, slug and number of tools: the values list_tools and search_tools take as category.',
    route: route('/v1/categories'),
    input: argumentsOf(Type.Object({})),
    path: () => '/v1/categories',
    text: categoriesText,
  },
  {
    name: 'list_tools',
    title: 'List tools',
    description:
      'Tools page by page, optionally in one category, ordered by name (default), rating or time of last change.',
    route: route('/v1/tools'),
    input: argumentsOf(ToolListQuery, ['category', 'page', 'limit', 'sort']),
    path: (args) => `/v1/tools${query(args)}`,
    text: toolPageText,
  },
  {
    name: 'compare_tools',
    title: 'Compare two tools',
    description:
      'Two tools side by side, by their slugs: both full records, the rating difference, shared and unique tags, whether the category is the same, both pricing summaries. Needs a Pro or Enterprise key.',
    route: route('/v1/compare/:tool1/:tool2'),
    input: argumentsOf(CompareParams),
    path: (args) => `/v1/compare/${slug(args.tool1)}/${slug(args.tool2)}`,
    text: comparisonText,
  },
];

/** The tool names, for labels and span attributes: a name outside them is `unknown`. */
export const TOOL_NAMES: ReadonlySet<string> = new Set(CATALOG_TOOLS.map((tool) => tool.name));
