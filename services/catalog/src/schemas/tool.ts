import { type Static, Type } from '@sinclair/typebox';
import { SLUG_PATTERN } from '../records/slug';

/** Where the record's facts were checked (records/provenance.ts). */
export const Source = Type.String({
  format: 'uri',
  description:
    "Where the record's facts were checked: the tool's own pricing or documentation page " +
    '(an http or https URL)',
});

/** When they were checked (records/provenance.ts). */
export const VerifiedAt = Type.String({
  format: 'date-time',
  description:
    "When the record's facts were last checked at `source`: ISO 8601 in UTC with milliseconds",
});

/** docs/api.md#the-tool-record: the data every tier receives, provenance included. */
export const FreeToolFields = {
  name: Type.String(),
  slug: Type.String({ pattern: SLUG_PATTERN }),
  category: Type.String(),
  description: Type.String(),
  rating: Type.Number({ minimum: 0, maximum: 5 }),
  pricing: Type.String(),
  website: Type.String({ format: 'uri' }),
  tags: Type.Array(Type.String()),
  source: Source,
  verifiedAt: VerifiedAt,
};

export const KeyFeature = Type.Object(
  { name: Type.String(), description: Type.String() },
  { $id: 'KeyFeature' },
);

export const PricingTier = Type.Object(
  {
    name: Type.String(),
    price: Type.String({ description: 'As sold, e.g. "$20/month", "Free", "Contact sales"' }),
    billingPeriod: Type.Union(
      ['month', 'year', 'usage', 'one-time', 'none', 'custom'].map((p) => Type.Literal(p)),
    ),
    features: Type.Array(Type.String()),
  },
  { $id: 'PricingTier' },
);

export const Security = Type.Object(
  {
    compliance: Type.Array(Type.String()),
    sso: Type.Boolean(),
    selfHostable: Type.Boolean(),
    dataRetention: Type.String(),
  },
  { $id: 'Security' },
);

export const Reviews = Type.Object(
  {
    averageRating: Type.Number({ minimum: 0, maximum: 5 }),
    count: Type.Integer({ minimum: 0 }),
    breakdown: Type.Object({
      '5': Type.Integer({ minimum: 0 }),
      '4': Type.Integer({ minimum: 0 }),
      '3': Type.Integer({ minimum: 0 }),
      '2': Type.Integer({ minimum: 0 }),
      '1': Type.Integer({ minimum: 0 }),
    }),
  },
  { $id: 'Reviews' },
);

export const EditorsChoice = Type.Object(
  { selected: Type.Boolean(), reason: Type.String() },
  { $id: 'EditorsChoice' },
);

/**
 * docs/api.md#the-tool-record, docs/api.md#response-bodies: the data Pro and Enterprise keys pay
 * for.
 */
export const PaidToolFields = {
  longDescription: Type.String(),
  gettingStarted: Type.String(),
  keyFeatures: Type.Array(KeyFeature),
  pricingTiers: Type.Array(PricingTier),
  integrations: Type.Array(Type.String()),
  security: Security,
  pros: Type.Array(Type.String()),
  cons: Type.Array(Type.String()),
  limitations: Type.Array(Type.String()),
  reviews: Reviews,
  editorsChoice: EditorsChoice,
};

/** Set by the server's change clock, never by the record's author: every tier receives it. */
export const UpdatedAt = Type.String({
  format: 'date-time',
  description:
    "When the tool last changed: the server's time, ISO 8601 in UTC with milliseconds; no two " +
    'tools share one (see "Syncing the catalog" in the API guide)',
});

/**
 * What every tier receives: the basic fields (provenance included) and `updatedAt`; nothing else
 * for Free keys.
 */
const EveryTierFields = { ...FreeToolFields, updatedAt: UpdatedAt };

export const FreeTool = Type.Object(EveryTierFields, {
  $id: 'Tool',
  description: 'Tool (Free tier)',
});
export const FullTool = Type.Object(
  { ...EveryTierFields, ...PaidToolFields },
  { $id: 'PaidTool', description: 'Tool (Pro and Enterprise tiers)' },
);

/** A tool's content (the dataset, a stored record): every field but `updatedAt`. */
export const ToolRecord = Type.Object({ ...FreeToolFields, ...PaidToolFields });

const score = { score: Type.Number({ description: 'Relevance; higher is better' }) };
export const FreeSearchHit = Type.Object(
  { ...EveryTierFields, ...score },
  { $id: 'SearchHit', description: 'Search hit (Free tier)' },
);
export const FullSearchHit = Type.Object(
  { ...EveryTierFields, ...PaidToolFields, ...score },
  { $id: 'PaidSearchHit', description: 'Search hit (Pro and Enterprise tiers)' },
);

export type ToolRecord = Static<typeof ToolRecord>;
/**
 * A tool as an import or an admin write gives it: `source` and `verifiedAt` may be left out, and
 * the store fills them in (records/provenance.ts).
 */
export type ToolRecordInput = Omit<ToolRecord, 'source' | 'verifiedAt'> &
  Partial<Pick<ToolRecord, 'source' | 'verifiedAt'>>;
/** A tool as stored and served. */
export type Tool = Static<typeof FullTool>;
export type SearchHit = Tool & { score: number };

export const Category = Type.Object(
  {
    name: Type.String(),
    slug: Type.String({ pattern: SLUG_PATTERN }),
    toolCount: Type.Integer({ minimum: 0 }),
  },
  { $id: 'Category' },
);
export type Category = Static<typeof Category>;
