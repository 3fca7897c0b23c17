import {
  InvalidToolsError,
  type ToolProblem,
  assertValidTools,
  formatProblem,
  normalizedRecord,
  validateTool,
  validateTools,
} from '../../../services/catalog/src/records/tool-validator';
import { loadVocabulary } from '../../../services/catalog/src/records/vocabulary';
import type { Tool } from '../../../services/catalog/src/schemas/tool';
import { dataset } from '../../support/catalog';

/** Record mutations arrive from JSON: any shape, so the cases may write anything anywhere. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

const { tags: VOCABULARY_TAGS } = loadVocabulary();
const chosen = dataset.tools.find((tool) => tool.editorsChoice.selected) as Tool;
const plain = dataset.tools.find((tool) => !tool.editorsChoice.selected) as Tool;

/** A fresh copy of a bundled tool, changed by `mutate`. */
function broken(mutate: (tool: Loose) => void, base: Tool = plain): Loose {
  const tool = structuredClone(base) as Loose;
  mutate(tool);
  return tool;
}

/** The text rule's words, as the API's 400 gives them for a field of one line or of several. */
const REFUSED_TEXT =
  /^must be text without control characters, invisible formatting characters \(zero-width, bidi, BOM\), Unicode line separators or invalid Unicode$/;
const REFUSED_MULTILINE_TEXT =
  /^must be text without control characters \(but tabs and line breaks\), invisible formatting/;

/** [what is broken, the field a problem must name, its message, the mutation of a valid tool]. */
const CASES: [string, string, RegExp, (tool: Loose) => void][] = [
  ['a missing field', 'description', /^Expected required property$/, (t) => delete t.description],
  ['a field of the wrong type', 'rating', /^Expected number$/, (t) => (t.rating = '4.5')],
  [
    'a nested field of the wrong type',
    'reviews/breakdown/5',
    /^Expected integer$/,
    (t) => (t.reviews.breakdown['5'] = 1.5),
  ],
  [
    'a list entry of the wrong type',
    'integrations/0',
    /^Expected string$/,
    (t) => (t.integrations = [42]),
  ],
  [
    'a billing period outside the enum',
    'pricingTiers/0/billingPeriod',
    /^Expected one of month, year, usage, one-time, none, custom$/,
    (t) => (t.pricingTiers[0].billingPeriod = 'weekly'),
  ],
  ['an unknown field', 'popularity', /^Unexpected property$/, (t) => (t.popularity = 99)],
  [
    'an unknown nested field',
    'security/soc2',
    /^Unexpected property$/,
    (t) => (t.security.soc2 = true),
  ],
  [
    'an unknown field in a list entry',
    'keyFeatures/1/icon',
    /^Unexpected property$/,
    (t) => (t.keyFeatures[1].icon = 'x.png'),
  ],
  ['a slug not in slug form', 'slug', /^Expected string to match/, (t) => (t.slug = 'Not_A_Slug')],
  [
    'a slug with a trailing hyphen',
    'slug',
    /^Expected string to match/,
    (t) => (t.slug = 'trailing-'),
  ],
  ['an empty name', 'name', /^must not be empty$/, (t) => (t.name = '  ')],
  ['a name of a zero-width space only', 'name', REFUSED_TEXT, (t) => (t.name = '\u200b')],
  [
    'a description with a right-to-left override',
    'description',
    REFUSED_TEXT,
    (t) => (t.description = `\u202e${t.description.slice(1)}`),
  ],
  ['a pro with a line separator', 'pros/0', REFUSED_TEXT, (t) => (t.pros[0] += '\u2028')],
  [
    'a pricing tier name with a soft hyphen',
    'pricingTiers/0/name',
    REFUSED_TEXT,
    (t) => (t.pricingTiers[0].name = 'Pro\u00adfessional'),
  ],
  [
    'a data retention with a byte order mark',
    'security/dataRetention',
    REFUSED_TEXT,
    (t) => (t.security.dataRetention = '30\ufeff days'),
  ],
  [
    'a key feature description of two lines',
    'keyFeatures/1/description',
    REFUSED_TEXT,
    (t) => (t.keyFeatures[1].description = 'one line\nand another'),
  ],
  [
    'a long description with a NUL',
    'longDescription',
    REFUSED_MULTILINE_TEXT,
    (t) => (t.longDescription = t.longDescription.replace(' ', '\u0000')),
  ],
  [
    'first steps with a bidi isolate',
    'gettingStarted',
    REFUSED_MULTILINE_TEXT,
    (t) => (t.gettingStarted += '\u2066'),
  ],
  [
    'an updatedAt that is no date-time',
    'updatedAt',
    /^Expected string to match 'date-time' format$/,
    (t) => (t.updatedAt = '2025-06-31T12:00:00Z'),
  ],
  [
    'an updatedAt without a time zone',
    'updatedAt',
    /^Expected string to match 'date-time' format$/,
    (t) => (t.updatedAt = '2025-06-30T12:00:00'),
  ],
  ['an updatedAt that is no string', 'updatedAt', /^Expected string$/, (t) => (t.updatedAt = 0)],
  [
    'a category outside the vocabulary',
    'category',
    /^"Blockchain" is not a category/,
    (t) => (t.category = 'Blockchain'),
  ],
  [
    'a category in the wrong case',
    'category',
    /is not a category/,
    (t) => (t.category = t.category.toLowerCase()),
  ],
  [
    'a rating above 5',
    'rating',
    /less or equal to 5/,
    (t) => (t.rating = t.reviews.averageRating = 5.5),
  ],
  ['a rating with two decimals', 'rating', /has more than one decimal$/, (t) => (t.rating -= 0.05)],
  [
    'a rating other than the average',
    'rating',
    /is not reviews\/averageRating/,
    (t) => (t.rating = t.rating === 1 ? 2 : 1),
  ],
  [
    'an average with two decimals',
    'reviews/averageRating',
    /^4.25 has more than one decimal$/,
    (t) => (t.rating = t.reviews.averageRating = 4.25),
  ],
  [
    'a breakdown not adding up to count',
    'reviews/breakdown',
    /^adds up to \d+, count is \d+$/,
    (t) => (t.reviews.count += 1),
  ],
  [
    'no reviews',
    'reviews/count',
    /^must be positive$/,
    (t) => (t.reviews = { ...t.reviews, count: 0, breakdown: { 5: 0, 4: 0, 3: 0, 2: 0, 1: 0 } }),
  ],
  [
    'an average far from the breakdown mean',
    'reviews/averageRating',
    /is not the breakdown's mean/,
    (t) => (t.rating = t.reviews.averageRating = t.rating > 3 ? 1 : 5),
  ],
  [
    'two key features',
    'keyFeatures',
    /^must have at least 3 entries, has 2$/,
    (t) => t.keyFeatures.splice(2),
  ],
  ['one pro', 'pros', /^must have at least 2 entries, has 1$/, (t) => t.pros.splice(1)],
  ['no cons', 'cons', /^must have at least 1 entries, has 0$/, (t) => (t.cons = [])],
  [
    'no limitations',
    'limitations',
    /^must have at least 1 entries, has 0$/,
    (t) => (t.limitations = []),
  ],
  [
    'no pricing tiers',
    'pricingTiers',
    /^must have at least 1 entries, has 0$/,
    (t) => (t.pricingTiers = []),
  ],
  ['an empty pro', 'pros/1', /^must not be empty$/, (t) => (t.pros[1] = ' ')],
  ['an empty con', 'cons/0', /^must not be empty$/, (t) => (t.cons[0] = '')],
  ['an empty limitation', 'limitations/0', /^must not be empty$/, (t) => (t.limitations[0] = '')],
  ['an empty integration', 'integrations/0', /^must not be empty$/, (t) => (t.integrations = [''])],
  [
    'a key feature without a name',
    'keyFeatures/2/name',
    /^must not be empty$/,
    (t) => (t.keyFeatures[2].name = ''),
  ],
  [
    'a key feature without a description',
    'keyFeatures/0/description',
    /^must not be empty$/,
    (t) => (t.keyFeatures[0].description = '\n'),
  ],
  ['an empty pricing summary', 'pricing', /^must not be empty$/, (t) => (t.pricing = '')],
  [
    'a pricing tier without a name',
    'pricingTiers/0/name',
    /^must not be empty$/,
    (t) => (t.pricingTiers[0].name = ''),
  ],
  [
    'a pricing tier without a price',
    'pricingTiers/0/price',
    /^must not be empty$/,
    (t) => (t.pricingTiers[0].price = ' '),
  ],
  [
    'an empty tier feature',
    'pricingTiers/0/features/0',
    /^must not be empty$/,
    (t) => (t.pricingTiers[0].features = ['']),
  ],
  [
    'an empty compliance entry',
    'security/compliance/0',
    /^must not be empty$/,
    (t) => (t.security.compliance = ['']),
  ],
  [
    'empty getting-started steps',
    'gettingStarted',
    /^must not be empty$/,
    (t) => (t.gettingStarted = ''),
  ],
  ['a website that is not a URL', 'website', /'uri' format/, (t) => (t.website = 'example.com')],
  [
    'an http website',
    'website',
    /is not an https:\/\/ URL$/,
    (t) => (t.website = 'http://example.com/'),
  ],
  [
    'a website without a real host',
    'website',
    /has no real host$/,
    (t) => (t.website = 'https://localhost/'),
  ],
  [
    'a source that is not a URL',
    'source',
    /'uri' format/,
    (t) => (t.source = 'example.com/pricing'),
  ],
  [
    'a source that is not a web page',
    'source',
    /is not an http:\/\/ or https:\/\/ URL$/,
    (t) => (t.source = 'ftp://example.com/pricing.txt'),
  ],
  [
    'a source without a real host',
    'source',
    /has no real host$/,
    (t) => (t.source = 'http://intranet/pricing'),
  ],
  [
    'a source of 2,049 characters',
    'source',
    /^must be at most 2048 characters, has 2049$/,
    (t) => (t.source = `https://example.com/${'p'.repeat(2049 - 20)}`),
  ],
  ['a source that is no string', 'source', /^Expected string$/, (t) => (t.source = null)],
  [
    'a verifiedAt that is no date-time',
    'verifiedAt',
    /^Expected string to match 'date-time' format$/,
    (t) => (t.verifiedAt = '2025-06-30'),
  ],
  [
    'a verifiedAt in the future',
    'verifiedAt',
    /^2999-01-01T00:00:00Z is in the future$/,
    (t) => (t.verifiedAt = '2999-01-01T00:00:00Z'),
  ],
  [
    'two tags',
    'tags',
    /^must have 3-8 tags, has 2$/,
    (t) => (t.tags = VOCABULARY_TAGS.slice(0, 2)),
  ],
  [
    'nine tags',
    'tags',
    /^must have 3-8 tags, has 9$/,
    (t) => (t.tags = VOCABULARY_TAGS.slice(0, 9)),
  ],
  [
    'an uppercase tag',
    'tags/1',
    /^"LLM" is not lowercase$/,
    (t) => (t.tags = ['api', 'LLM', 'sdk']),
  ],
  [
    'a tag outside the vocabulary',
    'tags/2',
    /^"blockchain" is not in the tag vocabulary$/,
    (t) => (t.tags = ['llm', 'api', 'blockchain']),
  ],
  [
    'a repeated tag',
    'tags/3',
    /^"llm" repeats tags\/0$/,
    (t) => (t.tags = ['llm', 'api', 'sdk', 'llm']),
  ],
  [
    "editors' choice without a reason",
    'editorsChoice/reason',
    /^must be given when selected$/,
    (t) => (t.editorsChoice = { selected: true, reason: ' ' }),
  ],
  [
    "a reason without editors' choice",
    'editorsChoice/reason',
    /^must be "" when not selected$/,
    (t) => (t.editorsChoice = { selected: false, reason: 'Great' }),
  ],
  [
    'a 59-character description',
    'description',
    /^must be 60-300 characters, has 59$/,
    (t) => (t.description = 'x'.repeat(59)),
  ],
  [
    'a 301-character description',
    'description',
    /^must be 60-300 characters, has 301$/,
    (t) => (t.description = 'x'.repeat(301)),
  ],
  [
    'a 299-character long description',
    'longDescription',
    /^must be 300-1200 characters, has 299$/,
    (t) => (t.longDescription = 'x'.repeat(299)),
  ],
  [
    'a 1,201-character long description',
    'longDescription',
    /^must be 300-1200 characters, has 1201$/,
    (t) => (t.longDescription = 'x'.repeat(1201)),
  ],
];

describe('validateTool', () => {
  test.each([plain, chosen])('a bundled tool ($slug) has no problem', (tool) => {
    expect(validateTool(tool)).toEqual([]);
  });

  test.each(['2025-06-30T12:00:00.000Z', '2025-06-30 14:00:00+02:00', '1999-12-31t23:59:60z'])(
    'a record may carry an updatedAt (%s), as the export writes it',
    (updatedAt) => {
      expect(validateTool({ ...plain, updatedAt })).toEqual([]);
    },
  );

  test('source and verifiedAt may be left out (an import then keeps or defaults them)', () => {
    const { source, verifiedAt, ...older } = plain;
    expect([source, verifiedAt]).toEqual([expect.any(String), expect.any(String)]);
    expect(validateTool(older)).toEqual([]);
    expect(validateTool({ ...older, source })).toEqual([]);
    expect(validateTool({ ...older, verifiedAt })).toEqual([]);
  });

  test("a source may be http or https, on the tool's site or elsewhere", () => {
    for (const source of ['http://example.com/pricing', 'https://docs.example.org/a?b=c#d']) {
      expect(validateTool({ ...plain, source })).toEqual([]);
    }
  });

  test('verifiedAt: any RFC 3339 form, up to a few minutes ahead of this clock', () => {
    const soon = new Date(Date.now() + 60_000).toISOString();
    const later = new Date(Date.now() + 10 * 60_000).toISOString();
    for (const verifiedAt of ['2025-06-30 14:00:00+02:00', '1999-12-31t23:59:60z', soon]) {
      expect(validateTool({ ...plain, verifiedAt })).toEqual([]);
    }
    expect(validateTool({ ...plain, verifiedAt: later })).toEqual([
      { index: 0, slug: plain.slug, field: 'verifiedAt', message: `${later} is in the future` },
    ]);
  });

  test.each(CASES)('%s: a problem names the slug and %s', (_what, field, message, mutate) => {
    const tool = broken(mutate);
    const problems = validateTool(tool, 3);
    const problem = { index: 3, slug: tool.slug, field, message: expect.stringMatching(message) };
    expect(problems).toContainEqual(problem);
  });

  test('the long description and the first steps may run over several lines, with tabs', () => {
    const tool = broken((t) => {
      t.longDescription = t.longDescription.replace(' ', '\n\n');
      t.gettingStarted = `1. Install:\r\n\tpip install it\n2. ${t.gettingStarted}`;
    });
    expect(validateTool(tool)).toEqual([]);
  });

  test('a missing field and an enum are reported once each, in words', () => {
    const tool = broken((t) => {
      delete t.name;
      t.pricingTiers[0].billingPeriod = 'weekly';
    });
    expect(validateTool(tool).map(formatProblem)).toEqual([
      `${tool.slug}: name: Expected required property`,
      `${tool.slug}: pricingTiers/0/billingPeriod: Expected one of month, year, usage, one-time, none, custom`,
    ]);
  });

  test('a field that fails the schema skips its rules; the other fields still get theirs', () => {
    const tool = broken((t) => {
      t.reviews = null;
      t.tags = ['llm', 'api', 'Blockchain'];
    });
    expect(validateTool(tool).map((p) => p.field)).toEqual(['reviews', 'tags/2']);
  });

  test.each([[5], [null], ['a tool'], [[plain]]])(
    'a record that is not an object (%j)',
    (record) => {
      const problems = validateTool(record, 6);
      expect(problems).toEqual([{ index: 6, slug: null, field: '', message: 'Expected object' }]);
      expect(problems.map(formatProblem)).toEqual(['#7: Expected object']);
    },
  );

  test('a record whose slug is not a string is named by its position', () => {
    const [first] = validateTool(
      broken((t) => (t.slug = 7)),
      0,
    );
    expect(first).toMatchObject({ slug: null, field: 'slug' });
    expect(formatProblem(first as ToolProblem)).toMatch(/^#1: slug: /);
  });
});

describe('validateTools', () => {
  const [a, b, c] = dataset.tools.filter((tool) => tool !== chosen && tool !== plain) as [
    Tool,
    Tool,
    Tool,
  ];

  test('a valid batch has no problem', () => {
    expect(validateTools([a, b, c])).toEqual([]);
  });

  test('a duplicate slug and a duplicate name (case-insensitive) name the later record', () => {
    const sameSlug = { ...b, name: `${b.name} Two`, slug: a.slug };
    const sameName = { ...c, name: ` ${a.name.toUpperCase()} ` };
    const problems = validateTools([a, sameSlug, sameName]);
    expect(problems).toEqual([
      { index: 1, slug: a.slug, field: 'slug', message: 'repeats #1' },
      {
        index: 2,
        slug: c.slug,
        field: 'name',
        message: `"${sameName.name}" is also the name of #1`,
      },
    ]);
  });

  test("each record's problems come in batch order, with the position of a slugless one", () => {
    const problems = validateTools([a, 42, broken((t) => (t.name = ''), c)]);
    expect(problems.map(formatProblem)).toEqual([
      '#2: Expected object',
      `${c.slug}: name: must not be empty`,
    ]);
  });

  test('the name of a stored tool is taken, unless the batch renames that tool', () => {
    const stored = [{ slug: 'other-tool', name: a.name.toLowerCase() }];
    expect(validateTools([a], stored)).toEqual([
      {
        index: 0,
        slug: a.slug,
        field: 'name',
        message: `"${stored[0]?.name}" is already the name of the stored tool other-tool`,
      },
    ]);
    const renamed = { ...b, slug: 'other-tool' };
    expect(validateTools([a, renamed], stored)).toEqual([]);
    expect(validateTools([a], [{ slug: a.slug, name: a.name }])).toEqual([]);
  });
});

describe('normalizedRecord', () => {
  test('every string, at any depth, is put in NFC; the rest is kept as it is', () => {
    const tool = broken((t) => {
      t.name = 'Cafe\u0301 Notes';
      t.keyFeatures[0].description = 'Re\u0301sume\u0301s';
      t.pros = ['Nai\u0308ve'];
    });
    const normalized = normalizedRecord(tool) as Loose;
    expect(normalized.name).toBe('Caf\u00e9 Notes');
    expect(normalized.keyFeatures[0].description).toBe('R\u00e9sum\u00e9s');
    expect(normalized.pros).toEqual(['Na\u00efve']);
    expect(normalized.rating).toBe(tool.rating);
    expect(normalized.security).toEqual(tool.security);
    expect(tool.name).toBe('Cafe\u0301 Notes');
    expect(normalizedRecord(plain)).toEqual(plain);
    expect([5, null, 'e\u0301'].map(normalizedRecord)).toEqual([5, null, '\u00e9']);
  });
});

describe('InvalidToolsError', () => {
  test('assertValidTools passes a valid batch and throws every problem of an invalid one', () => {
    expect(() => assertValidTools([chosen, plain])).not.toThrow();
    const records = [1, 2, 3, 4, 5, 6, 7].map((n) => (n === 4 ? plain : n));
    let error: unknown;
    try {
      assertValidTools(records);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidToolsError);
    const { problems, message } = error as InvalidToolsError;
    expect(problems.map(formatProblem)).toEqual(
      ['#1', '#2', '#3', '#5', '#6', '#7'].map((n) => `${n}: Expected object`),
    );
    expect(message).toBe(
      'Invalid tool records: #1: Expected object; #2: Expected object; #3: Expected object; ' +
        '#5: Expected object; #6: Expected object; and 1 more',
    );
  });
});
