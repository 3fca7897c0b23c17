import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { SearchHit } from '../../../../services/catalog/src/schemas/tool';
import type {
  CatalogReader,
  SearchEngine,
} from '../../../../services/catalog/src/store/catalog-store';

/**
 * The search fixtures (test/catalog/store/search/search-fixtures.json) and the relevance figures
 * measured with them: top-5 hit rate and mean reciprocal rank. Used by search-fixtures.test.ts
 * and by `npm run bench` (bench/search-bench.ts).
 */

export type FixtureKind = 'typo' | 'spacing' | 'synonym' | 'category';

export interface SearchFixture {
  /** What the user types. */
  q: string;
  /** Tools that must appear in the top 5, 1 to 3 slugs. */
  expectedInTop5: string[];
  /** The category asked for (`/search?category=`): every hit must be in it. */
  category?: string;
  /** What search behaviour (docs/api.md#search) the query exercises; none for plain queries. */
  kind?: FixtureKind;
  /** The query is a tool's name: that tool (the first expected slug) must come first. */
  exactName?: boolean;
  /** Every one of the top 5 belongs to this category. */
  top5Category?: string;
  /** Every one of the top 5 carries each of these tags. */
  top5Tags?: string[];
}

const FIXTURES_FILE = path.join(__dirname, 'search-fixtures.json');

export function loadSearchFixtures(): SearchFixture[] {
  return (JSON.parse(readFileSync(FIXTURES_FILE, 'utf8')) as { fixtures: SearchFixture[] })
    .fixtures;
}

/**
 * Typos are what `$text` cannot forgive (docs/api.md, "Search"): on that engine the typo
 * fixtures are left out, and said to be.
 */
export function fixturesFor(engine: SearchEngine, fixtures: SearchFixture[]): SearchFixture[] {
  return engine === 'text' ? fixtures.filter((f) => f.kind !== 'typo') : fixtures;
}

export interface FixtureOutcome {
  fixture: SearchFixture;
  items: SearchHit[];
  top5: string[];
  missing: string[];
  /** 1 / the rank of the first expected tool in the top 5, 0 when none is there. */
  reciprocalRank: number;
}

export async function runFixture(
  store: CatalogReader,
  fixture: SearchFixture,
): Promise<FixtureOutcome> {
  const { items } = await store.search({ text: fixture.q, limit: 5, category: fixture.category });
  const top5 = items.map((tool) => tool.slug);
  const first = top5.findIndex((slug) => fixture.expectedInTop5.includes(slug));
  return {
    fixture,
    items,
    top5,
    missing: fixture.expectedInTop5.filter((slug) => !top5.includes(slug)),
    reciprocalRank: first < 0 ? 0 : 1 / (first + 1),
  };
}

export interface Relevance {
  queries: number;
  /** Share of queries with every expected tool in the top 5. */
  top5HitRate: number;
  /** Mean reciprocal rank of the first expected tool, within the top 5. */
  mrr: number;
}

export function relevance(outcomes: FixtureOutcome[]): Relevance {
  const n = outcomes.length;
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    queries: n,
    top5HitRate: round(outcomes.filter((o) => o.missing.length === 0).length / n),
    mrr: round(outcomes.reduce((sum, o) => sum + o.reciprocalRank, 0) / n),
  };
}

export async function measureRelevance(
  store: CatalogReader,
  fixtures: SearchFixture[] = loadSearchFixtures(),
): Promise<Relevance & { engine: SearchEngine }> {
  const outcomes = [];
  for (const fixture of fixturesFor(store.searchEngine, fixtures)) {
    outcomes.push(await runFixture(store, fixture));
  }
  return { engine: store.searchEngine, ...relevance(outcomes) };
}

/** What search must reach on the embedded store: every fixture's tools in the top 5, MRR 0.9. */
export const RELEVANCE_GOALS = { top5HitRate: 1, mrr: 0.9 } as const;
