import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { DATASET_DIR } from '../../../services/catalog/src/records/dataset';
import { formatInstant, parseDateTime } from '../../../services/catalog/src/records/date-time';
import { formatProblem, validateTools } from '../../../services/catalog/src/records/tool-validator';
import { loadVocabulary } from '../../../services/catalog/src/records/vocabulary';
import type { Tool } from '../../../services/catalog/src/schemas/tool';
import { categorySlug } from '../../../services/catalog/src/records/slug';
import { dataset } from '../../support/catalog';

/**
 * The bundled dataset against docs/dataset-format.md: every record passes the runtime
 * validator (each problem reported with the tool's slug and field), the collection as a whole
 * has the shape the format asks for, and the doc's tables say what data/vocabulary.json says.
 */

const DOC = readFileSync(
  path.resolve(__dirname, '..', '..', '..', 'docs', 'dataset-format.md'),
  'utf8',
);

/** The body of a `## heading` section of the format doc, up to the next `## ` heading. */
function docSection(heading: string): string {
  const start = DOC.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/dataset-format.md has no "## ${heading}" section`);
  const body = DOC.slice(start + heading.length + 5);
  const end = body.indexOf('\n## ');
  return end < 0 ? body : body.slice(0, end);
}

/** The rows of the doc's category table: [display name, slug]. */
function docCategories(): string[][] {
  return docSection('Categories')
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
}

/** The tag vocabulary of the doc: the comma-separated lines of its section. */
function docTagVocabulary(): string[] {
  return docSection('Tag vocabulary')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^[a-z0-9-]+(\s*,\s*[a-z0-9-]+)*,?$/.test(line) && line.includes(','))
    .join(',')
    .split(',')
    .map((tag) => tag.trim())
    .filter(Boolean);
}

const VOCABULARY = loadVocabulary();
const { tools, meta } = dataset;

describe('data/vocabulary.json', () => {
  test('16 categories and a tag vocabulary of some size', () => {
    expect(VOCABULARY.categories).toHaveLength(16);
    expect(VOCABULARY.tags.length).toBeGreaterThan(50);
    expect(VOCABULARY.tags).toContain('open-source');
    expect(VOCABULARY.tags).toContain('free-tier');
  });

  test('each category slug is categorySlug of its name; names, slugs and tags are unique', () => {
    const { categories, tags } = VOCABULARY;
    const wrongSlugs = categories.filter(({ name, slug }) => categorySlug(name) !== slug);
    expect(wrongSlugs).toEqual([]);
    expect(new Set(categories.map((c) => c.name)).size).toBe(categories.length);
    expect(new Set(categories.map((c) => c.slug)).size).toBe(categories.length);
    expect(new Set(tags).size).toBe(tags.length);
  });

  test("the category table of docs/dataset-format.md is the file's, in its order", () => {
    expect(docCategories()).toEqual(VOCABULARY.categories.map((c) => [c.name, c.slug]));
  });

  test("the tag vocabulary of docs/dataset-format.md is the file's, in its order", () => {
    expect(docTagVocabulary()).toEqual(VOCABULARY.tags);
  });
});

describe('dataset', () => {
  test('every tool passes the validator: schema, field rules, unique slugs and names', () => {
    expect(validateTools(tools).map(formatProblem)).toEqual([]);
  });

  test("every tool has its provenance: a source, and verifiedAt at the pricing facts' date", () => {
    // The validator lets an import leave them out; a bundled record may not.
    const verifiedAt = `${meta.pricingAsOf}T00:00:00.000Z`;
    expect(formatInstant(parseDateTime(verifiedAt)!)).toBe(verifiedAt);
    const problems = tools.flatMap((tool) => [
      ...(typeof tool.source === 'string' ? [] : [`${tool.slug}: no source`]),
      ...(tool.verifiedAt === verifiedAt ? [] : [`${tool.slug}: verifiedAt ${tool.verifiedAt}`]),
    ]);
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

  test("editors' choice: 7-13% of tools", () => {
    const share = tools.filter((t) => t.editorsChoice.selected).length / tools.length;
    expect(share).toBeGreaterThanOrEqual(0.07);
    expect(share).toBeLessThanOrEqual(0.13);
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
