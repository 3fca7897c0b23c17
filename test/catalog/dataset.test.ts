import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { FormatRegistry, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { DATASET_DIR } from '../../services/catalog/src/dataset';
import { FullTool, type Tool } from '../../services/catalog/src/schemas/tool';
import { SLUG_PATTERN, categorySlug } from '../../services/catalog/src/slug';
import { dataset } from '../support/catalog';

/**
 * The schema test of issue 3 over the whole bundled dataset: every rule of
 * docs/dataset-format.md, each violation reported with the offending tool's slug.
 */

const DOC = readFileSync(path.resolve(__dirname, '..', '..', 'docs', 'dataset-format.md'), 'utf8');

/** The body of a `## heading` section of the format doc, up to the next `## ` heading. */
function docSection(heading: string): string {
  const start = DOC.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/dataset-format.md has no "## ${heading}" section`);
  const body = DOC.slice(start + heading.length + 5);
  const end = body.indexOf('\n## ');
  return end < 0 ? body : body.slice(0, end);
}

/** The category table of the doc: display name -> slug. */
function docCategories(): Map<string, string> {
  const rows = docSection('Categories')
    .split('\n')
    .filter((line) => line.trim().startsWith('|'))
    .map((line) =>
      line
        .trim()
        .replace(/^\||\|$/g, '')
        .split('|')
        .map((cell) => cell.trim()),
    )
    .filter(([name]) => name !== 'name' && !/^-+$/.test(name ?? ''));
  return new Map(rows.map(([name, slug]) => [name as string, slug as string]));
}

/** The tag vocabulary of the doc: the comma-separated lines of its section. */
function docTagVocabulary(): Set<string> {
  const listLines = docSection('Tag vocabulary')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^[a-z0-9-]+(\s*,\s*[a-z0-9-]+)*,?$/.test(line) && line.includes(','));
  return new Set(
    listLines
      .join(',')
      .split(',')
      .map((tag) => tag.trim())
      .filter(Boolean),
  );
}

const CATEGORIES = docCategories();
const VOCABULARY = docTagVocabulary();
const SLUG_FORM = new RegExp(SLUG_PATTERN);
const { tools, meta } = dataset;

// The schema declares `website` with format "uri"; TypeBox checks formats only once registered.
if (!FormatRegistry.Has('uri')) {
  FormatRegistry.Set('uri', (value) => {
    try {
      new URL(value);
      return true;
    } catch {
      return false;
    }
  });
}

/** Property paths present in `value` but not declared by `schema` (objects, arrays of objects). */
function extraFields(schema: TSchema, value: unknown, at = ''): string[] {
  if (Array.isArray(value) && schema.type === 'array' && schema.items) {
    return value.flatMap((item, i) => extraFields(schema.items as TSchema, item, `${at}/${i}`));
  }
  if (value && typeof value === 'object' && schema.type === 'object' && schema.properties) {
    const props = schema.properties as Record<string, TSchema>;
    return Object.entries(value).flatMap(([key, child]) =>
      key in props ? extraFields(props[key] as TSchema, child, `${at}/${key}`) : [`${at}/${key}`],
    );
  }
  return [];
}

const oneDecimal = (n: number) => Math.abs(Math.round(n * 10) / 10 - n) < 1e-9;

/** Runs a rule over every tool, collecting `slug: problem` lines. */
function problemsOf(rule: (tool: Tool) => string[]): string[] {
  return tools.flatMap((tool) => rule(tool).map((problem) => `${tool.slug}: ${problem}`));
}

describe('the format doc parses', () => {
  test('16 categories and a tag vocabulary of some size', () => {
    expect(CATEGORIES.size).toBe(16);
    expect(VOCABULARY.size).toBeGreaterThan(50);
    expect(VOCABULARY).toContain('open-source');
    expect(VOCABULARY).toContain('free-tier');
  });
});

describe('dataset', () => {
  test('every tool has every field with the right type, and no other field', () => {
    const problems = problemsOf((tool) => [
      ...[...Value.Errors(FullTool, tool)].map((e) => `${e.path || '/'} ${e.message}`),
      ...extraFields(FullTool, tool).map((field) => `${field} is not a field of the schema`),
    ]);
    expect(problems).toEqual([]);
    expect(tools.every((tool) => Value.Check(FullTool, tool))).toBe(true);
  });

  test('slugs are unique and in slug form', () => {
    const seen = new Map<string, number>();
    for (const tool of tools) seen.set(tool.slug, (seen.get(tool.slug) ?? 0) + 1);
    const problems = [
      ...[...seen].filter(([, n]) => n > 1).map(([slug, n]) => `${slug}: used by ${n} tools`),
      ...problemsOf((tool) => (SLUG_FORM.test(tool.slug) ? [] : ['slug not in slug form'])),
    ];
    expect(problems).toEqual([]);
  });

  test('names are non-empty and unique, case-insensitively', () => {
    const seen = new Set<string>();
    const problems = problemsOf((tool) => {
      const key = tool.name.trim().toLowerCase();
      const out = key ? [] : ['empty name'];
      if (seen.has(key)) out.push(`duplicate name "${tool.name}"`);
      seen.add(key);
      return out;
    });
    expect(problems).toEqual([]);
  });

  test('categories come from the table of docs/dataset-format.md, with matching slugs', () => {
    const problems = problemsOf((tool) => {
      const expected = CATEGORIES.get(tool.category);
      if (expected === undefined) return [`category "${tool.category}" is not in the doc's table`];
      const slug = categorySlug(tool.category);
      return slug === expected
        ? []
        : [`categorySlug("${tool.category}") is "${slug}", the doc says "${expected}"`];
    });
    for (const [name, slug] of CATEGORIES) {
      if (categorySlug(name) !== slug)
        problems.push(`doc table: ${name} -> ${slug} != categorySlug`);
    }
    expect(problems).toEqual([]);
  });

  test('each data/tools/<category-slug>.json file holds only tools of that category', () => {
    const dir = path.join(DATASET_DIR, 'tools');
    const problems = readdirSync(dir)
      .filter((file) => file.endsWith('.json'))
      .flatMap((file) => {
        const records = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Tool[];
        return records
          .filter((tool) => `${categorySlug(tool.category)}.json` !== file)
          .map((tool) => `${tool.slug}: in ${file} but its category is "${tool.category}"`);
      });
    expect(problems).toEqual([]);
  });

  test('>= 150 tools, >= 12 categories, none with fewer than 5 tools', () => {
    const counts = new Map<string, number>();
    for (const tool of tools) counts.set(tool.category, (counts.get(tool.category) ?? 0) + 1);
    expect(tools.length).toBeGreaterThanOrEqual(150);
    expect(counts.size).toBeGreaterThanOrEqual(12);
    const small = [...counts].filter(([, n]) => n < 5).map(([name, n]) => `${name}: ${n} tools`);
    expect(small).toEqual([]);
  });

  test('rating is 0-5 with one decimal and equals reviews.averageRating', () => {
    const problems = problemsOf((tool) => {
      const out: string[] = [];
      if (!(tool.rating >= 0 && tool.rating <= 5)) out.push(`rating ${tool.rating} outside 0-5`);
      if (!oneDecimal(tool.rating)) out.push(`rating ${tool.rating} has more than one decimal`);
      if (tool.rating !== tool.reviews.averageRating) {
        out.push(`rating ${tool.rating} != reviews.averageRating ${tool.reviews.averageRating}`);
      }
      return out;
    });
    expect(problems).toEqual([]);
  });

  test('review breakdown adds up to count, and its weighted mean rounds to averageRating', () => {
    const problems = problemsOf(({ reviews }) => {
      const out: string[] = [];
      const stars = [5, 4, 3, 2, 1] as const;
      const counts = stars.map((s) => reviews.breakdown[`${s}`]);
      const sum = counts.reduce((a, b) => a + b, 0);
      if (sum !== reviews.count) out.push(`breakdown adds up to ${sum}, count is ${reviews.count}`);
      if (reviews.count <= 0) out.push('reviews.count is not positive');
      else {
        const mean = stars.reduce((acc, s, i) => acc + s * (counts[i] as number), 0) / sum;
        // Rounds to one decimal: within half a step, allowing for float error at the boundary.
        if (Math.abs(mean - reviews.averageRating) > 0.05 + 1e-9) {
          out.push(`breakdown mean ${mean.toFixed(3)} != averageRating ${reviews.averageRating}`);
        }
      }
      if (!oneDecimal(reviews.averageRating)) out.push('averageRating has more than one decimal');
      return out;
    });
    expect(problems).toEqual([]);
  });

  test('minimum list lengths, and non-empty list entries', () => {
    const minimums = { keyFeatures: 3, pros: 2, cons: 1, limitations: 1, pricingTiers: 1 } as const;
    const problems = problemsOf((tool) => {
      const out: string[] = [];
      for (const [field, min] of Object.entries(minimums)) {
        const list = tool[field as keyof typeof minimums] as unknown[];
        if (list.length < min) out.push(`${field} has ${list.length}, needs >= ${min}`);
      }
      for (const field of ['pros', 'cons', 'limitations', 'integrations'] as const) {
        if (tool[field].some((entry) => entry.trim() === ''))
          out.push(`${field} has an empty entry`);
      }
      tool.keyFeatures.forEach((f, i) => {
        if (!f.name.trim() || !f.description.trim()) out.push(`keyFeatures[${i}] is empty`);
      });
      return out;
    });
    expect(problems).toEqual([]);
  });

  test('pricing tiers have a name and a price string', () => {
    const problems = problemsOf((tool) => {
      const out = tool.pricing.trim() ? [] : ['pricing summary is empty'];
      tool.pricingTiers.forEach((tier, i) => {
        if (!tier.name.trim()) out.push(`pricingTiers[${i}] has no name`);
        if (typeof tier.price !== 'string' || !tier.price.trim()) {
          out.push(`pricingTiers[${i}] (${tier.name}) price is not a non-empty string`);
        }
      });
      return out;
    });
    expect(problems).toEqual([]);
  });

  test('websites are https URLs', () => {
    const problems = problemsOf((tool) => {
      try {
        const url = new URL(tool.website);
        if (url.protocol !== 'https:') return [`website ${tool.website} is not https`];
        if (!url.hostname.includes('.')) return [`website ${tool.website} has no real host`];
        return [];
      } catch {
        return [`website "${tool.website}" is not a URL`];
      }
    });
    expect(problems).toEqual([]);
  });

  test('tags: 3-8 per tool, lowercase, unique, all from the vocabulary', () => {
    const problems = problemsOf(({ tags }) => {
      const out: string[] = [];
      if (tags.length < 3 || tags.length > 8) out.push(`${tags.length} tags, needs 3-8`);
      if (new Set(tags).size !== tags.length) out.push(`duplicate tags in [${tags.join(', ')}]`);
      for (const tag of tags) {
        if (tag !== tag.toLowerCase()) out.push(`tag "${tag}" is not lowercase`);
        if (!VOCABULARY.has(tag)) out.push(`tag "${tag}" is not in the vocabulary`);
      }
      return out;
    });
    expect(problems).toEqual([]);
  });

  test('editors\' choice: 7-13% of tools, each with a reason; the others with reason ""', () => {
    const problems = problemsOf(({ editorsChoice }) => {
      if (editorsChoice.selected && !editorsChoice.reason.trim())
        return ['selected without a reason'];
      if (!editorsChoice.selected && editorsChoice.reason !== '')
        return ['reason set but not selected'];
      return [];
    });
    expect(problems).toEqual([]);
    const share = tools.filter((t) => t.editorsChoice.selected).length / tools.length;
    expect(share).toBeGreaterThanOrEqual(0.07);
    expect(share).toBeLessThanOrEqual(0.13);
  });

  test('descriptions are 60-300 characters', () => {
    const problems = problemsOf(({ description }) =>
      description.length >= 60 && description.length <= 300
        ? []
        : [`description has ${description.length} characters, needs 60-300`],
    );
    expect(problems).toEqual([]);
  });

  test('meta.json has a non-empty attribution and an ISO pricingAsOf date', () => {
    expect(typeof meta.attribution).toBe('string');
    expect(meta.attribution.trim()).not.toBe('');
    expect(meta.pricingAsOf).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const date = new Date(`${meta.pricingAsOf}T00:00:00Z`);
    expect(Number.isNaN(date.getTime())).toBe(false);
    expect(date.toISOString().slice(0, 10)).toBe(meta.pricingAsOf);
  });
});
