import type { Tool } from '../schemas/tool';

/**
 * The `comparison` block of `/compare` (docs/api.md#response-bodies): what differs and what is
 * shared.
 */
export function compareTools(a: Tool, b: Tool) {
  const tagsB = new Set(b.tags);
  const tagsA = new Set(a.tags);
  const integrationsB = new Set(b.integrations.map((i) => i.toLowerCase()));
  const ratingDifference = Math.round((a.rating - b.rating) * 10) / 10;
  return {
    ratingDifference,
    higherRated: ratingDifference > 0 ? a.slug : ratingDifference < 0 ? b.slug : null,
    sameCategory: a.category === b.category,
    sharedTags: a.tags.filter((t) => tagsB.has(t)),
    uniqueTags: {
      [a.slug]: a.tags.filter((t) => !tagsB.has(t)),
      [b.slug]: b.tags.filter((t) => !tagsA.has(t)),
    },
    pricing: { [a.slug]: a.pricing, [b.slug]: b.pricing },
    sharedIntegrations: a.integrations.filter((i) => integrationsB.has(i.toLowerCase())),
  };
}
