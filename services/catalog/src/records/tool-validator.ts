import { FormatRegistry, KindGuard, type TSchema, Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { normalizedText, textProblem } from '../../../shared/trimmed-fields';
import { parseDateTime } from './date-time';
import { Source, ToolRecord, type ToolRecordInput, UpdatedAt, VerifiedAt } from '../schemas/tool';
import { loadVocabulary } from './vocabulary';

/**
 * The rules of docs/dataset-format.md for one tool record, as one runtime check: the dataset
 * test holds the bundled data to them, and operator imports
 * (docs/api.md#catalog-changes-and-freshness) are refused by them.
 */

export interface ToolProblem {
  /** Position of the record in its batch, from 0. */
  index: number;
  /** The record's `slug` when it has a string one, so an operator can find it. */
  slug: string | null;
  /** Path to the offending value, e.g. `reviews/breakdown/5` or `tags/2`; '' for the record. */
  field: string;
  message: string;
}

/** `<slug or #position>: <field>: <message>`, positions counted from 1 as an operator would. */
export function formatProblem(p: ToolProblem): string {
  const record = p.slug ?? `#${p.index + 1}`;
  return p.field ? `${record}: ${p.field}: ${p.message}` : `${record}: ${p.message}`;
}

const SHOWN_IN_MESSAGE = 5;

/** Thrown by callers that refuse a batch: carries every problem, names the first few. */
export class InvalidToolsError extends Error {
  override readonly name = 'InvalidToolsError';

  constructor(readonly problems: readonly ToolProblem[]) {
    const shown = problems.slice(0, SHOWN_IN_MESSAGE).map(formatProblem);
    const more = problems.length - shown.length;
    super(`Invalid tool records: ${shown.join('; ')}${more > 0 ? `; and ${more} more` : ''}`);
  }
}

// TypeBox checks a format only once registered: `website` and `source` are "uri"s, `updatedAt`
// and `verifiedAt` "date-time"s.
if (!FormatRegistry.Has('uri')) FormatRegistry.Set('uri', (value) => URL.canParse(value));
if (!FormatRegistry.Has('date-time')) {
  FormatRegistry.Set('date-time', (value) => parseDateTime(value) !== undefined);
}

/** A copy of `schema` whose objects, at every depth, admit no property beyond their own. */
function closed(schema: TSchema): TSchema {
  if (KindGuard.IsObject(schema)) {
    const properties = Object.fromEntries(
      Object.entries(schema.properties).map(([key, property]) => [key, closed(property)]),
    );
    return { ...schema, properties, additionalProperties: false };
  }
  if (KindGuard.IsArray(schema)) return { ...schema, items: closed(schema.items) };
  return schema;
}

/**
 * A record may carry `updatedAt` (an export re-imported, say), but the server's change clock
 * sets it, so its own value is never stored: it only has to be a date-time, as the export
 * writes it. `source` and `verifiedAt` may be left out of an import or an admin write, which
 * then keeps the stored ones or gets defaults (provenance.ts); the bundled records must have
 * them (the dataset test says so).
 */
const toolSchema = TypeCompiler.Compile(
  closed(
    Type.Object({
      ...ToolRecord.properties,
      source: Type.Optional(Source),
      verifiedAt: Type.Optional(VerifiedAt),
      updatedAt: Type.Optional(UpdatedAt),
    }),
  ),
);

/** TypeBox says "Expected union value" for an enum; name the allowed values instead. */
function schemaMessage(schema: TSchema, message: string): string {
  if (!KindGuard.IsUnion(schema) || !schema.anyOf.every(KindGuard.IsLiteral)) return message;
  return `Expected one of ${schema.anyOf.map((literal) => literal.const).join(', ')}`;
}

type Finding = [field: string, message: string];
type Report = (field: string, message: string) => void;

/** A rule over a record that matches the schema in the fields it `reads`. */
interface Rule {
  reads: readonly (keyof ToolRecord)[];
  check: (tool: ToolRecordInput, problem: Report) => void;
}

const vocabulary = loadVocabulary();
const CATEGORIES = new Set(vocabulary.categories.map((category) => category.name));
const TAGS = new Set(vocabulary.tags);
const STARS = ['5', '4', '3', '2', '1'] as const;
const MIN_ENTRIES = { keyFeatures: 3, pros: 2, cons: 1, limitations: 1, pricingTiers: 1 } as const;
const TEXT_LISTS = ['pros', 'cons', 'limitations', 'integrations'] as const;

const oneDecimal = (n: number) => Math.abs(Math.round(n * 10) / 10 - n) < 1e-9;
/** Longer than any real page's address, short enough to show in a listing. */
const MAX_URL_LENGTH = 2048;
/** How far ahead of this server's clock a `verifiedAt` may be: another machine's clock skew. */
const CLOCK_SKEW_MS = 5 * 60_000;

/**
 * The one rule for a record's web addresses: absolute, of one of `protocols`, on a real host
 * (a name with a dot), at most MAX_URL_LENGTH characters. The schema's "uri" format has already
 * parsed it; an absent one (`source` left out of an import) is the provenance's business.
 */
function webAddressRule(field: 'website' | 'source', protocols: readonly string[]): Rule {
  const schemes = protocols.map((protocol) => `${protocol}//`).join(' or ');
  return {
    reads: [field],
    check: (tool, problem) => {
      const address = tool[field];
      if (address === undefined) return;
      const url = new URL(address);
      if (address.length > MAX_URL_LENGTH) {
        problem(field, `must be at most ${MAX_URL_LENGTH} characters, has ${address.length}`);
      } else if (!protocols.includes(url.protocol)) {
        problem(field, `${address} is not an ${schemes} URL`);
      } else if (!url.hostname.includes('.')) problem(field, `${address} has no real host`);
    },
  };
}

function lengthRule(field: 'description' | 'longDescription', min: number, max: number): Rule {
  return {
    reads: [field],
    check: (tool, problem) => {
      const { length } = tool[field];
      if (length < min || length > max) {
        problem(field, `must be ${min}-${max} characters, has ${length}`);
      }
    },
  };
}

function nonEmpty(problem: Report, field: string, text: string): void {
  if (!text.trim()) problem(field, 'must not be empty');
}

type Lines = 'one' | 'several';

/**
 * Every text of a record its author writes in their own words, with where it is and whether it
 * may run over several lines (the long description and the first steps); the slug, the website,
 * the category and the tags have stricter rules of their own.
 */
function authoredText(tool: ToolRecordInput): [field: string, text: string, lines: Lines][] {
  const one = (field: string, text: string): [string, string, Lines] => [field, text, 'one'];
  return [
    one('name', tool.name),
    one('description', tool.description),
    one('pricing', tool.pricing),
    ['longDescription', tool.longDescription, 'several'],
    ['gettingStarted', tool.gettingStarted, 'several'],
    ...tool.keyFeatures.flatMap((feature, i) => [
      one(`keyFeatures/${i}/name`, feature.name),
      one(`keyFeatures/${i}/description`, feature.description),
    ]),
    ...tool.pricingTiers.flatMap((tier, i) => [
      one(`pricingTiers/${i}/name`, tier.name),
      one(`pricingTiers/${i}/price`, tier.price),
      ...tier.features.map((feature, j) => one(`pricingTiers/${i}/features/${j}`, feature)),
    ]),
    ...TEXT_LISTS.flatMap((field) => tool[field].map((entry, i) => one(`${field}/${i}`, entry))),
    ...tool.security.compliance.map((entry, i) => one(`security/compliance/${i}`, entry)),
    one('security/dataRetention', tool.security.dataRetention),
    one('editorsChoice/reason', tool.editorsChoice.reason),
  ];
}

/**
 * A copy of a record with every string in NFC, the form the API's text rule gives what people
 * write (docs/dataset-format.md): an import is normalised before it is checked and stored.
 */
export function normalizedRecord(record: unknown): unknown {
  if (typeof record === 'string') return normalizedText(record);
  if (Array.isArray(record)) return record.map(normalizedRecord);
  if (record === null || typeof record !== 'object') return record;
  return Object.fromEntries(
    Object.entries(record).map(([key, value]) => [key, normalizedRecord(value)]),
  );
}

const RULES: readonly Rule[] = [
  {
    // The API's one rule for text people write, in the words of its 400s.
    reads: [
      'name',
      'description',
      'pricing',
      'longDescription',
      'gettingStarted',
      'keyFeatures',
      'pricingTiers',
      ...TEXT_LISTS,
      'security',
      'editorsChoice',
    ],
    check: (tool, problem) => {
      for (const [field, text, lines] of authoredText(tool)) {
        const refused = textProblem(text, lines);
        if (refused !== undefined) problem(field, `must be text ${refused}`);
      }
    },
  },
  {
    reads: ['name', 'gettingStarted', 'pricing'],
    check: (tool, problem) => {
      nonEmpty(problem, 'name', tool.name);
      nonEmpty(problem, 'gettingStarted', tool.gettingStarted);
      nonEmpty(problem, 'pricing', tool.pricing);
    },
  },
  lengthRule('description', 60, 300),
  lengthRule('longDescription', 300, 1200),
  {
    // The vocabulary's slugs are categorySlug of its names (a test holds it to that), so a
    // known category name also has the slug its file and the /categories answer use.
    reads: ['category'],
    check: ({ category }, problem) => {
      if (!CATEGORIES.has(category)) {
        problem('category', `"${category}" is not a category of the vocabulary`);
      }
    },
  },
  {
    reads: ['rating', 'reviews'],
    check: ({ rating, reviews }, problem) => {
      if (!oneDecimal(rating)) problem('rating', `${rating} has more than one decimal`);
      if (rating !== reviews.averageRating) {
        problem('rating', `${rating} is not reviews/averageRating (${reviews.averageRating})`);
      }
    },
  },
  {
    reads: ['reviews'],
    check: ({ reviews }, problem) => {
      const { averageRating, count, breakdown } = reviews;
      if (!oneDecimal(averageRating)) {
        problem('reviews/averageRating', `${averageRating} has more than one decimal`);
      }
      if (count <= 0) problem('reviews/count', 'must be positive');
      const sum = STARS.reduce((acc, star) => acc + breakdown[star], 0);
      if (sum !== count) problem('reviews/breakdown', `adds up to ${sum}, count is ${count}`);
      if (sum > 0) {
        const mean = STARS.reduce((acc, star) => acc + Number(star) * breakdown[star], 0) / sum;
        // Rounds to one decimal: within half a step, allowing for float error at the boundary.
        if (Math.abs(mean - averageRating) > 0.05 + 1e-9) {
          problem(
            'reviews/averageRating',
            `${averageRating} is not the breakdown's mean ${mean.toFixed(3)} rounded`,
          );
        }
      }
    },
  },
  {
    reads: ['keyFeatures', 'pros', 'cons', 'limitations', 'pricingTiers', 'integrations'],
    check: (tool, problem) => {
      for (const [field, min] of Object.entries(MIN_ENTRIES)) {
        const { length } = tool[field as keyof typeof MIN_ENTRIES];
        if (length < min) problem(field, `must have at least ${min} entries, has ${length}`);
      }
      for (const field of TEXT_LISTS) {
        tool[field].forEach((entry, i) => nonEmpty(problem, `${field}/${i}`, entry));
      }
      tool.keyFeatures.forEach((feature, i) => {
        nonEmpty(problem, `keyFeatures/${i}/name`, feature.name);
        nonEmpty(problem, `keyFeatures/${i}/description`, feature.description);
      });
      tool.pricingTiers.forEach((tier, i) => {
        nonEmpty(problem, `pricingTiers/${i}/name`, tier.name);
        nonEmpty(problem, `pricingTiers/${i}/price`, tier.price);
        tier.features.forEach((f, j) => nonEmpty(problem, `pricingTiers/${i}/features/${j}`, f));
      });
    },
  },
  {
    reads: ['security'],
    check: ({ security }, problem) => {
      security.compliance.forEach((c, i) => nonEmpty(problem, `security/compliance/${i}`, c));
    },
  },
  webAddressRule('website', ['https:']),
  webAddressRule('source', ['http:', 'https:']),
  {
    // The schema's "date-time" format has already parsed it; it is stored canonical.
    reads: ['verifiedAt'],
    check: ({ verifiedAt }, problem) => {
      if (verifiedAt === undefined) return;
      if (parseDateTime(verifiedAt)! > Date.now() + CLOCK_SKEW_MS) {
        problem('verifiedAt', `${verifiedAt} is in the future`);
      }
    },
  },
  {
    reads: ['tags'],
    check: ({ tags }, problem) => {
      if (tags.length < 3 || tags.length > 8) {
        problem('tags', `must have 3-8 tags, has ${tags.length}`);
      }
      const firsts = new Map<string, number>();
      tags.forEach((tag, i) => {
        const first = firsts.get(tag);
        if (first === undefined) firsts.set(tag, i);
        else problem(`tags/${i}`, `"${tag}" repeats tags/${first}`);
        if (tag !== tag.toLowerCase()) problem(`tags/${i}`, `"${tag}" is not lowercase`);
        else if (!TAGS.has(tag)) problem(`tags/${i}`, `"${tag}" is not in the tag vocabulary`);
      });
    },
  },
  {
    reads: ['editorsChoice'],
    check: ({ editorsChoice: { selected, reason } }, problem) => {
      if (selected && !reason.trim())
        problem('editorsChoice/reason', 'must be given when selected');
      if (!selected && reason !== '')
        problem('editorsChoice/reason', 'must be "" when not selected');
    },
  },
];

/** Problems of one record: its schema errors, then the rules over the fields that passed it. */
export function validateTool(record: unknown, index = 0): ToolProblem[] {
  const slug = stringField(record, 'slug');
  const findings: Finding[] = [];
  const failed = new Set<string>(); // top-level fields with schema errors
  if (!toolSchema.Check(record)) {
    const seen = new Set<string>();
    for (const error of toolSchema.Errors(record)) {
      const field = error.path.slice(1);
      // A missing property is reported twice (required, then its type); keep the first.
      if (seen.has(field)) continue;
      seen.add(field);
      findings.push([field, schemaMessage(error.schema, error.message)]);
      failed.add(field.split('/')[0] as string);
    }
  }
  if (!failed.has('')) {
    const report: Report = (field, message) => findings.push([field, message]);
    for (const rule of RULES) {
      if (!rule.reads.some((field) => failed.has(field))) {
        rule.check(record as ToolRecordInput, report);
      }
    }
  }
  return findings.map(([field, message]) => ({ index, slug, field, message }));
}

export interface KnownTool {
  slug: string;
  name: string;
}

/** The record's `key` when it is a string, else null: a batch may hold anything. */
function stringField(record: unknown, key: 'slug' | 'name'): string | null {
  if (!record || typeof record !== 'object' || !(key in record)) return null;
  const value = (record as Record<typeof key, unknown>)[key];
  return typeof value === 'string' ? value : null;
}

const nameKey = (name: string) => name.trim().toLowerCase();

/**
 * Problems of a batch: each record's, plus slugs and names (case-insensitive) used twice in
 * it. `existing` are tools already stored: a record may not take the name of one of them
 * unless the batch also holds that tool (under its slug, perhaps renamed).
 */
export function validateTools(
  records: readonly unknown[],
  existing: Iterable<KnownTool> = [],
): ToolProblem[] {
  const problems = records.flatMap((record, index) => validateTool(record, index));
  const slugs = new Map<string, number>();
  const names = new Map<string, number>();
  records.forEach((record, index) => {
    const slug = stringField(record, 'slug');
    const name = stringField(record, 'name');
    const sameSlug = slug === null ? undefined : slugs.get(slug);
    if (sameSlug !== undefined) {
      problems.push({ index, slug, field: 'slug', message: `repeats #${sameSlug + 1}` });
    } else if (slug !== null) slugs.set(slug, index);
    const key = name === null ? '' : nameKey(name);
    const sameName = names.get(key);
    if (sameName !== undefined) {
      const message = `"${name}" is also the name of #${sameName + 1}`;
      problems.push({ index, slug, field: 'name', message });
    } else if (key) names.set(key, index);
  });
  for (const tool of existing) {
    const index = names.get(nameKey(tool.name));
    if (index === undefined || slugs.has(tool.slug)) continue;
    const message = `"${tool.name}" is already the name of the stored tool ${tool.slug}`;
    problems.push({ index, slug: stringField(records[index], 'slug'), field: 'name', message });
  }
  return problems.sort((a, b) => a.index - b.index);
}

/** Throws InvalidToolsError unless every record of the batch is valid. */
export function assertValidTools(
  records: readonly unknown[],
  existing?: Iterable<KnownTool>,
): asserts records is (ToolRecordInput & { updatedAt?: string })[] {
  const problems = validateTools(records, existing);
  if (problems.length > 0) throw new InvalidToolsError(problems);
}
