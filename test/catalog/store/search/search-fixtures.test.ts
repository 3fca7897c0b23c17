import type { CatalogStore } from '../../../../services/catalog/src/store/catalog-store';
import { inCategory } from '../../../../services/catalog/src/store/query-semantics';
import { dataset } from '../../../support/catalog';
import { onEveryStore } from '../../../support/store-suites';
import {
  type FixtureOutcome,
  RELEVANCE_GOALS,
  type SearchFixture,
  fixturesFor,
  loadSearchFixtures,
  relevance,
  runFixture,
} from './search-relevance';

/**
 * Search fixtures (docs/api.md#search): queries a user would type, typos, spacing
 * variants, synonyms and category-scoped searches among them, each with the tools that must be
 * in its top 5. They run on the embedded store always, and on MongoDB when MONGODB_URI is set,
 * so that the data and every search engine are proved to work together. The embedded store
 * must also reach the relevance goals over all of them.
 */

const fixtures = loadSearchFixtures();
const exactNameFixtures = fixtures.filter((f) => f.exactName);
const toolsBySlug = new Map(dataset.tools.map((t) => [t.slug, t]));

describe('the search fixture file', () => {
  test('has at least 96 queries, each with 1 to 3 known slugs', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(96);
    const problems = fixtures.flatMap(({ q, expectedInTop5 }) => [
      ...(expectedInTop5.length < 1 || expectedInTop5.length > 3
        ? [`"${q}": ${expectedInTop5.length} expected slugs, needs 1 to 3`]
        : []),
      ...expectedInTop5
        .filter((slug) => !toolsBySlug.has(slug))
        .map((slug) => `"${q}": no tool has the slug ${slug}`),
    ]);
    expect(problems).toEqual([]);
  });

  test('exercises every search behaviour: typos, spacing, synonyms, categories', () => {
    const count = (kind: string) => fixtures.filter((f) => f.kind === kind).length;
    expect({
      typo: count('typo') >= 8,
      spacing: count('spacing') >= 8,
      synonym: count('synonym') >= 8,
      category: count('category') >= 6,
    }).toEqual({ typo: true, spacing: true, synonym: true, category: true });
  });

  test('queries are unique with their category, and valid for /v1/search', () => {
    // Case counts: "GitHub Copilot" and "github copilot" are two ways users type a name.
    const keys = fixtures.map((f) => `${f.q.trim()}|${f.category ?? ''}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const { q } of fixtures) expect(q.trim().length).toBeGreaterThanOrEqual(2);
    for (const { q } of fixtures) expect(q.trim().length).toBeLessThanOrEqual(200);
  });

  test('exact-name queries are names of the tool they expect first', () => {
    expect(exactNameFixtures.length).toBeGreaterThan(0);
    const problems = exactNameFixtures
      .filter(({ q, expectedInTop5 }) => {
        const tool = toolsBySlug.get(expectedInTop5[0] ?? '');
        return tool?.name.toLowerCase() !== q.trim().toLowerCase();
      })
      .map(({ q, expectedInTop5 }) => `"${q}" is not the name of ${expectedInTop5[0]}`);
    expect(problems).toEqual([]);
  });

  test('categories named are categories of the dataset, and hold the tools expected', () => {
    const categories = new Set(dataset.tools.map((t) => t.category));
    const problems = fixtures.flatMap((f) => [
      ...(f.top5Category !== undefined && !categories.has(f.top5Category)
        ? [`"${f.q}": top5Category ${f.top5Category}`]
        : []),
      ...(f.category !== undefined
        ? f.expectedInTop5
            .filter((slug) => !inCategory(toolsBySlug.get(slug)!, f.category!))
            .map((slug) => `"${f.q}": ${slug} is not in ${f.category}`)
        : []),
    ]);
    expect(problems).toEqual([]);
  });

  test('typo queries are no tool words: each needs a typo to match', () => {
    const words = new Set(
      dataset.tools.flatMap((t) =>
        [t.name, t.category, t.description, ...t.tags].flatMap((text) =>
          text.toLowerCase().split(/[^a-z0-9]+/),
        ),
      ),
    );
    const misspelt = fixtures
      .filter((f) => f.kind === 'typo')
      .filter((f) => f.q.split(' ').every((word) => words.has(word)))
      .map((f) => f.q);
    expect(misspelt).toEqual([]);
  });
});

function searchFixtures(storeName: string, openStore: () => Promise<CatalogStore>): void {
  describe(`search fixtures on the ${storeName} store`, () => {
    let store: CatalogStore;
    const outcomes: FixtureOutcome[] = [];

    beforeAll(async () => {
      store = await openStore();
      const left = fixtures.length - fixturesFor(store.searchEngine, fixtures).length;
      if (left > 0) {
        console.warn(
          `${storeName} store searches with ${store.searchEngine}: ${left} typo fixtures NOT run ` +
            '(the $text index cannot forgive typos; docs/api.md, "Search").',
        );
      }
    });
    afterAll(async () => {
      await store?.close();
    });

    test('every fixture has its expected tools in its top 5, and nothing outside its filters', async () => {
      for (const fixture of fixturesFor(store.searchEngine, fixtures)) {
        outcomes.push(await runFixture(store, fixture));
      }
      const inside = (c: string, f: SearchFixture) =>
        (f.top5Category === undefined || c === f.top5Category) &&
        (f.category === undefined || inCategory({ category: c }, f.category));
      // Each problem names the query and what came back.
      const problems = outcomes.flatMap(({ fixture: f, items, top5, missing }) => [
        ...(missing.length > 0 ? [`"${f.q}": ${missing} missing from ${top5}`] : []),
        ...items
          .filter((t) => !inside(t.category, f))
          .map((t) => `"${f.q}": ${t.slug} is in ${t.category}`),
        ...items
          .filter((t) => !(f.top5Tags ?? []).every((tag) => t.tags.includes(tag)))
          .map((t) => `"${f.q}": ${t.slug} lacks a tag of ${f.top5Tags}`),
      ]);
      expect(problems).toEqual([]);
    });

    test.each(exactNameFixtures)('the exact name "$q" is first', async ({ q, expectedInTop5 }) => {
      const { items } = await store.search({ text: q, limit: 5 });
      expect(items[0]?.slug).toBe(expectedInTop5[0]);
    });

    test("every tool's exact name, as written and in lowercase, puts that tool first", async () => {
      const problems: string[] = [];
      for (const tool of dataset.tools) {
        for (const q of new Set([tool.name, tool.name.toLowerCase()])) {
          const { items } = await store.search({ text: q, limit: 5 });
          const first = items[0]?.slug;
          if (first !== tool.slug) problems.push(`"${q}": first is ${first}, not ${tool.slug}`);
        }
      }
      expect(problems).toEqual([]);
    });

    test('relevance over every fixture run: top-5 hit rate and MRR', () => {
      const figures = relevance(outcomes);
      console.log(`search relevance on the ${storeName} store (${store.searchEngine}):`, figures);
      expect(figures.queries).toBe(fixturesFor(store.searchEngine, fixtures).length);
      if (store.searchEngine === 'minisearch') {
        expect(figures.top5HitRate).toBe(RELEVANCE_GOALS.top5HitRate);
        expect(figures.mrr).toBeGreaterThanOrEqual(RELEVANCE_GOALS.mrr);
      }
    });
  });
}

onEveryStore('search-fixture', searchFixtures);
