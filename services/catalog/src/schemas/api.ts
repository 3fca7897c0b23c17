import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { trimmedString } from '../../../shared/trimmed-fields';
import { Category, FreeSearchHit, FreeTool, FullSearchHit, FullTool } from './tool';

/** The orders `/v1/tools` can be listed in; ties by slug. */
export const TOOL_SORTS = [
  'name',
  '-name',
  'rating',
  '-rating',
  'updatedAt',
  '-updatedAt',
] as const;
export type ToolSort = (typeof TOOL_SORTS)[number];

/**
 * Request and response schemas of the catalog's public routes (docs/api.md#endpoints,
 * docs/api.md#parameters-and-validation, docs/api.md#response-bodies). A response schema's `$id` is
 * its name in the OpenAPI document (see services/shared/openapi.ts).
 */

export { ErrorBody } from '../../../shared/openapi';

const Attribution = Type.String({ description: 'Data-source credit line' });

/**
 * An integer query parameter. Ajv coerces "Infinity" and "1e400" to Infinity and then skips its
 * range checks, which look at finite numbers only (ajv-validator/ajv#2212). The `allOf` checks the
 * coerced number's type once more: a number is not coerced again, and a non-finite one is no
 * integer there (Ajv's `strictNumbers`), so it is a 400 like any other value out of range.
 */
function queryInteger(options: { minimum: number; maximum: number; default: number }) {
  return Type.Integer({ ...options, allOf: [{ type: 'integer' }] });
}

const CategoryParam = Type.String({
  minLength: 1,
  maxLength: 100,
  description: 'Category name or slug, any case',
});

export const ToolListQuery = Type.Object(
  {
    // Any page is valid (docs/api.md#parameters-and-validation), one past the end simply empty;
    // beyond the largest exact integer the page asked for could not be echoed truthfully.
    page: queryInteger({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 1 }),
    limit: queryInteger({ minimum: 1, maximum: 100, default: 20 }),
    category: Type.Optional(CategoryParam),
    search: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'Words that must all occur in name, description or tags',
      }),
    ),
    updatedSince: Type.Optional(
      Type.String({
        format: 'date-time',
        description:
          'Only tools changed after this instant (not at it): an ISO 8601 date-time with a time ' +
          'zone (RFC 3339), e.g. 2025-06-30T12:00:00Z; `+` in an offset is sent as %2B. To sync, ' +
          'send the newest `updatedAt` seen, with `sort=updatedAt` (see "Syncing the catalog")',
      }),
    ),
    verifiedBefore: Type.Optional(
      Type.String({
        format: 'date-time',
        description:
          'Only tools whose facts were last checked before this instant (`verifiedAt` earlier, ' +
          'not equal): an ISO 8601 date-time with a time zone (RFC 3339), e.g. ' +
          '2025-06-30T00:00:00Z; the records to check again',
      }),
    ),
    sort: Type.Union(
      TOOL_SORTS.map((s) => Type.Literal(s)),
      {
        default: 'name',
        description:
          'name (ties by slug), rating (ties by name), updatedAt (oldest change first); `-` for descending',
      },
    ),
  },
  { additionalProperties: false },
);

export const SearchQuery = Type.Object(
  {
    q: trimmedString({
      minLength: 2,
      maxLength: 200,
      description:
        'Search text: words match as words or word prefixes, with typos forgiven in words of 5 or more letters, written apart or together, and by synonym',
    }),
    limit: queryInteger({ minimum: 1, maximum: 50, default: 10 }),
    category: Type.Optional(CategoryParam),
  },
  { additionalProperties: false },
);

const SlugParam = Type.String({ minLength: 1, maxLength: 100, description: 'Tool slug' });
export const ToolParams = Type.Object({ slug: SlugParam });
export const CompareParams = Type.Object({ tool1: SlugParam, tool2: SlugParam });

// The metas stay unnamed: each sits in both tiers' envelopes, which a route's documented 200
// joins in one anyOf, and Ajv (fast-json-stringify's branch picker) refuses an `$id` twice.
const ListMeta = Type.Object({
  total: Type.Integer(),
  page: Type.Integer(),
  limit: Type.Integer(),
  totalPages: Type.Integer(),
  attribution: Attribution,
});

/** One category among a search's matches. */
export const CategoryFacet = Type.Object({
  name: Type.String(),
  slug: Type.String(),
  count: Type.Integer({ minimum: 1, description: 'Matches in this category' }),
});
export type CategoryFacet = Static<typeof CategoryFacet>;

const SearchMeta = Type.Object({
  total: Type.Integer({
    description: 'Number of matches (in `category` when given); data holds at most `limit`',
  }),
  limit: Type.Integer(),
  query: Type.String(),
  category: Type.Optional(Type.String({ description: 'The category asked for, as given' })),
  facets: Type.Object({
    category: Type.Array(CategoryFacet, {
      description:
        'The categories of every match, before the category filter: most matches first, ties by name',
    }),
  }),
  attribution: Attribution,
});

const DetailMeta = Type.Object({ attribution: Attribution });

function envelope($id: string, data: TSchema, meta: TSchema, description: string) {
  return Type.Object({ data, meta }, { $id, description });
}

/** One response schema per tier: the Free one cannot serialize a paid field. */
export const ToolListResponse = {
  free: envelope('ToolList', Type.Array(FreeTool), ListMeta, 'Free tier'),
  paid: envelope('PaidToolList', Type.Array(FullTool), ListMeta, 'Pro and Enterprise tiers'),
};
export const ToolDetailResponse = {
  free: envelope('ToolDetail', FreeTool, DetailMeta, 'Free tier'),
  paid: envelope('PaidToolDetail', FullTool, DetailMeta, 'Pro and Enterprise tiers'),
};
export const SearchResponse = {
  free: envelope('SearchResults', Type.Array(FreeSearchHit), SearchMeta, 'Free tier'),
  paid: envelope(
    'PaidSearchResults',
    Type.Array(FullSearchHit),
    SearchMeta,
    'Pro and Enterprise tiers',
  ),
};

export const CategoryListResponse = envelope(
  'CategoryList',
  Type.Array(Category),
  Type.Object({ total: Type.Integer(), attribution: Attribution }),
  'Categories with tool counts',
);

export const Comparison = Type.Object(
  {
    ratingDifference: Type.Number({ description: 'rating of the first tool minus the second' }),
    higherRated: Type.Union([Type.String(), Type.Null()], {
      description: 'slug, or null on a tie',
    }),
    sameCategory: Type.Boolean(),
    sharedTags: Type.Array(Type.String()),
    uniqueTags: Type.Record(Type.String(), Type.Array(Type.String()), { description: 'by slug' }),
    pricing: Type.Record(Type.String(), Type.String(), { description: 'pricing summary by slug' }),
    sharedIntegrations: Type.Array(Type.String()),
  },
  { $id: 'Comparison' },
);

export const CompareResponse = envelope(
  'ComparisonResult',
  Type.Object({
    tools: Type.Array(FullTool, { minItems: 2, maxItems: 2 }),
    comparison: Comparison,
  }),
  DetailMeta,
  'Side-by-side comparison (Pro and Enterprise)',
);

/** The documented 200 of a tiered route: either tier's shape. */
export function tieredResponse(schemas: { free: TSchema; paid: TSchema }) {
  return Type.Union([schemas.paid, schemas.free], {
    description: 'Full records for Pro and Enterprise keys; the Free fields for Free keys',
  });
}

const CHANGE_TYPES = ['tool.created', 'tool.updated', 'tool.deleted'] as const;
const ChangeType = Type.Union(
  CHANGE_TYPES.map((type) => Type.Literal(type)),
  { description: 'What happened to the record' },
);
const ChangedAt = Type.String({
  format: 'date-time',
  description: "When the change was written: the server's time, ISO 8601 in UTC",
});

export const ChangesQuery = Type.Object(
  {
    since: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description:
          "A cursor from an earlier answer (`meta.nextCursor`, or an entry's `cursor`): the changes after it. Without it, from the oldest change kept",
      }),
    ),
    limit: queryInteger({ minimum: 1, maximum: 100, default: 100 }),
  },
  { additionalProperties: false },
);

function changeEntry($id: string, tool: TSchema, description: string) {
  return Type.Object(
    {
      cursor: Type.String({ description: 'Opaque: `since` for the changes after this one' }),
      type: ChangeType,
      slug: Type.String(),
      at: ChangedAt,
      changedFields: Type.Optional(
        Type.Array(Type.String(), { description: 'tool.updated: the fields that changed' }),
      ),
      tool: Type.Optional(tool),
    },
    { $id, description },
  );
}

const ChangesMeta = Type.Object({
  nextCursor: Type.String({
    description: 'Send as `since` for the changes after this page (the same one if it was empty)',
  }),
  hasMore: Type.Boolean({ description: 'More changes follow at once: ask again with nextCursor' }),
  attribution: Attribution,
});

/** One response schema per tier: a Free key's `tool` holds the Free fields. */
export const ChangeListResponse = {
  free: envelope(
    'ChangeList',
    Type.Array(changeEntry('Change', FreeTool, 'A change (Free tier)')),
    ChangesMeta,
    'Free tier',
  ),
  paid: envelope(
    'PaidChangeList',
    Type.Array(changeEntry('PaidChange', FullTool, 'A change (Pro and Enterprise tiers)')),
    ChangesMeta,
    'Pro and Enterprise tiers',
  ),
};

const FieldChange = Type.Object(
  {
    from: Type.Unknown({ description: 'The value before; null for a created record' }),
    to: Type.Unknown({ description: 'The value after' }),
  },
  { $id: 'FieldChange' },
);

export const HistoryEntry = Type.Object(
  {
    at: ChangedAt,
    type: ChangeType,
    changes: Type.Record(Type.String(), FieldChange, {
      description:
        "By field, the fields the caller's tier sees: every initial value for tool.created, each changed one for tool.updated, none for tool.deleted",
    }),
  },
  { $id: 'HistoryEntry' },
);

export const HistoryResponse = envelope(
  'ToolHistory',
  Type.Array(HistoryEntry, { description: 'Newest first' }),
  Type.Object({ slug: Type.String(), total: Type.Integer(), attribution: Attribution }),
  "A record's changes, newest first",
);
