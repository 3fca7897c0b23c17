import { type CatalogTool, tiersOf } from '../catalog-tool';
import { compareTools } from './compare-tools';
import { getTool } from './get-tool';
import { getToolHistory } from './get-tool-history';
import { listCategories } from './list-categories';
import { listTools } from './list-tools';
import { searchTools } from './search-tools';

/**
 * The read-only tools of the MCP endpoint (docs/api.md#mcp-for-ai-agents), in the order
 * `tools/list` gives them. The one list: the server registers it, and its instructions and the
 * route's description in the API reference are written from it, so a tool is added here and in
 * its own file, nowhere else.
 */
export const CATALOG_TOOLS: readonly CatalogTool[] = [
  searchTools,
  getTool,
  getToolHistory,
  listCategories,
  listTools,
  compareTools,
];

/** The tools by name; a name outside them is `unknown` in labels and span attributes. */
export const TOOLS_BY_NAME: ReadonlyMap<string, CatalogTool> = new Map(
  CATALOG_TOOLS.map((tool) => [tool.name, tool]),
);

/** Who may call a tool, in brackets (" (Pro and Enterprise)"); nothing when every key may. */
function onlyFor(tool: CatalogTool, keys = ''): string {
  const tiers = tiersOf(tool.route);
  return tiers === undefined ? '' : ` (${tiers}${keys})`;
}

/** The tools in a line, as the route's description lists them. */
export const TOOLS_IN_A_LINE = CATALOG_TOOLS.map((tool) => `${tool.name}${onlyFor(tool)}`).join(
  ', ',
);

/**
 * What the server tells an agent at `initialize` and `server/discover`: the catalog, each tool's
 * use, the resources, the quota.
 */
export const INSTRUCTIONS = [
  'A catalog of AI tools, frameworks and platforms.',
  `${CATALOG_TOOLS.map((tool) => `${tool.name} ${tool.purpose}${onlyFor(tool, ' keys')}`).join('; ')}.`,
  'The resources tooldirectory://categories and tooldirectory://tools/{slug} give the same records as JSON.',
  'Each tools/call and resources/read takes one unit of the daily quota of the API key; discovery, initialize and the lists take none.',
].join(' ');
