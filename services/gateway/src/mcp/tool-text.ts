/** A catalog answer's JSON body: the API's envelope (docs/api.md#response-bodies). */
export interface CatalogAnswerBody {
  data: unknown;
  meta: Record<string, unknown>;
}

/**
 * The fields of a tool record every tier gets (docs/api.md#the-tool-record) that a summary names.
 */
interface ToolSummary {
  name: string;
  slug: string;
  category: string;
  rating: number;
  pricing: string;
  website: string;
  description: string;
}

interface CategorySummary {
  name: string;
  slug: string;
  toolCount: number;
}

interface Comparison {
  tools: [ToolSummary, ToolSummary];
  comparison: { ratingDifference: number; sameCategory: boolean; sharedTags: string[] };
}

/**
 * The short text next to a tool's structured content, for a client that shows text only: one
 * line per record, the identifiers an agent passes on (slugs), nothing the structured content
 * lacks. The structured content is the whole answer.
 */
function toolLine(tool: ToolSummary): string {
  return `- ${tool.name} (${tool.slug}), ${tool.category}, rated ${tool.rating}/5: ${tool.description}`;
}

function lines(header: string, rows: string[]): string {
  return [header, ...rows].join('\n');
}

export function searchText(body: CatalogAnswerBody, q: string): string {
  const tools = body.data as ToolSummary[];
  return lines(
    `${String(body.meta.total)} matches for "${q}", ${tools.length} shown:`,
    tools.map(toolLine),
  );
}

export function toolPageText(body: CatalogAnswerBody): string {
  const { page, totalPages, total } = body.meta;
  return lines(
    `Page ${String(page)} of ${String(totalPages)} (${String(total)} tools):`,
    (body.data as ToolSummary[]).map(toolLine),
  );
}

export function categoriesText(body: CatalogAnswerBody): string {
  return lines(
    `${String(body.meta.total)} categories:`,
    (body.data as CategorySummary[]).map((c) => `- ${c.name} (${c.slug}): ${c.toolCount} tools`),
  );
}

export function toolText(body: CatalogAnswerBody): string {
  const tool = body.data as ToolSummary;
  return `${tool.name} (${tool.slug}), ${tool.category}, rated ${tool.rating}/5, ${tool.pricing}, ${tool.website}\n${tool.description}`;
}

export function comparisonText(body: CatalogAnswerBody): string {
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
}
