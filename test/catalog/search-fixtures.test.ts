import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { CatalogStore } from '../../services/catalog/src/store/catalog-store';
import { dataset } from '../support/catalog';
import { onEveryStore } from '../support/store-suites';

/**
 * Search fixtures (issue 3, item 4): queries a user would type, each with the tools that must
 * be in its top 5. They run on the embedded store always, and on MongoDB when MONGODB_URI is
 * set, so that the data and both search engines are proved to work together.
 */

interface SearchFixture {
  /** What the user types. */
  q: string;
  /** Tools that must appear in `store.search(q, 5)`, 1 to 3 slugs. */
  expectedInTop5: string[];
  /** The query is a tool's name: that tool (the first expected slug) must come first. */
  exactName?: boolean;
  /** Every one of the top 5 belongs to this category. */
  top5Category?: string;
  /** Every one of the top 5 carries each of these tags. */
  top5Tags?: string[];
}

const FIXTURES_FILE = path.join(__dirname, 'search-fixtures.json');
const { fixtures } = JSON.parse(readFileSync(FIXTURES_FILE, 'utf8')) as {
  fixtures: SearchFixture[];
};
const exactNameFixtures = fixtures.filter((f) => f.exactName);
const toolsBySlug = new Map(dataset.tools.map((t) => [t.slug, t]));

describe('the search fixture file', () => {
  test('has at least 24 queries, each with 1 to 3 known slugs', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(24);
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

  test('queries are unique, and valid for /v1/search (2 to 200 characters)', () => {
    // Case counts: "GitHub Copilot" and "github copilot" are two ways users type a name.
    const queries = fixtures.map((f) => f.q.trim());
    expect(new Set(queries).size).toBe(queries.length);
    for (const q of queries) expect(q.length).toBeGreaterThanOrEqual(2);
    for (const q of queries) expect(q.length).toBeLessThanOrEqual(200);
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

  test('top5Category names a category of the dataset', () => {
    const categories = new Set(dataset.tools.map((t) => t.category));
    const unknown = fixtures
      .filter((f) => f.top5Category !== undefined && !categories.has(f.top5Category))
      .map((f) => `"${f.q}": ${f.top5Category}`);
    expect(unknown).toEqual([]);
  });
});

function searchFixtures(storeName: string, openStore: () => Promise<CatalogStore>): void {
  describe(`search fixtures on the ${storeName} store`, () => {
    let store: CatalogStore;

    beforeAll(async () => {
      store = await openStore();
    });
    afterAll(async () => {
      await store?.close();
    });

    async function top5(q: string) {
      const { items } = await store.search(q, 5);
      expect(items.length).toBeLessThanOrEqual(5);
      return items;
    }

    test.each(fixtures)('"$q" has $expectedInTop5 in its top 5', async (fixture) => {
      const items = await top5(fixture.q);
      const slugs = items.map((t) => t.slug);
      // The query and the top 5 are in the value compared, so a failure shows what came back.
      const missing = fixture.expectedInTop5.filter((slug) => !slugs.includes(slug));
      expect({ q: fixture.q, top5: slugs, missing }).toEqual({
        q: fixture.q,
        top5: slugs,
        missing: [],
      });
      if (fixture.top5Tags !== undefined) {
        const untagged = items
          .filter((t) => !fixture.top5Tags!.every((tag) => t.tags.includes(tag)))
          .map((t) => `${t.slug} (${t.tags.join(',')})`);
        expect({ q: fixture.q, untagged }).toEqual({ q: fixture.q, untagged: [] });
      }
      if (fixture.top5Category !== undefined) {
        const outside = items
          .filter((t) => t.category !== fixture.top5Category)
          .map((t) => `${t.slug} (${t.category})`);
        expect({ q: fixture.q, outsideCategory: outside }).toEqual({
          q: fixture.q,
          outsideCategory: [],
        });
      }
    });

    test.each(exactNameFixtures)('the exact name "$q" is first', async ({ q, expectedInTop5 }) => {
      const items = await top5(q);
      expect(items[0]?.slug).toBe(expectedInTop5[0]);
    });

    test("every tool's exact name, as written and in lowercase, puts that tool first", async () => {
      const problems: string[] = [];
      for (const tool of dataset.tools) {
        for (const q of new Set([tool.name, tool.name.toLowerCase()])) {
          const items = await store.search(q, 5);
          const first = items.items[0]?.slug;
          if (first !== tool.slug) problems.push(`"${q}": first is ${first}, not ${tool.slug}`);
        }
      }
      expect(problems).toEqual([]);
    });
  });
}

onEveryStore('search-fixture', searchFixtures);
