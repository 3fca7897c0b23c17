import { parse as parseCsv } from 'csv-parse/sync';
import type { FastifyInstance } from 'fastify';
import type { Tool } from '../../../services/catalog/src/schemas/tool';
import type { CatalogStore } from '../../../services/catalog/src/store/catalog-store';
import { FREE_FIELDS, asTier, buildTestCatalog, dataset } from '../../support/catalog';

const PAID_FIELDS = [
  'cons',
  'editorsChoice',
  'gettingStarted',
  'integrations',
  'keyFeatures',
  'limitations',
  'longDescription',
  'pricingTiers',
  'pros',
  'reviews',
  'security',
];
const SLUG_FORM = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
/** The form `updatedAt` is written in: UTC, milliseconds. */
const INSTANT_FORM = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The catalog's behaviour (docs/api.md#endpoints, docs/api.md#parameters-and-validation,
 * docs/api.md#response-bodies, docs/api.md#health-request-ids-and-tracing), asserted over HTTP
 * against a store. Every store implementation runs this same suite: see catalog-contract.test.ts.
 */
export function catalogContract(storeName: string, openStore: () => Promise<CatalogStore>): void {
  describe(`catalog contract on the ${storeName} store`, () => {
    let app: FastifyInstance;
    let store: CatalogStore;
    const total = dataset.tools.length;

    beforeAll(async () => {
      store = await openStore();
      app = await buildTestCatalog(store);
    });
    afterAll(async () => {
      await app.close();
      await store.close();
    });

    async function get(url: string, tier: 'free' | 'pro' | 'enterprise' = 'pro') {
      const res = await app.inject({ url, headers: asTier(tier) });
      return { status: res.statusCode, body: res.json() as Json, headers: res.headers };
    }

    describe('pagination', () => {
      test.each([1, 7, 20, 100])(
        'every tool exactly once across all pages at limit %i',
        async (limit) => {
          const seen: string[] = [];
          const pages = Math.ceil(total / limit);
          for (let page = 1; page <= pages; page++) {
            const { status, body } = await get(`/v1/tools?limit=${limit}&page=${page}`);
            expect(status).toBe(200);
            expect(body.meta).toMatchObject({ total, page, limit, totalPages: pages });
            seen.push(...body.data.map((t: Json) => t.slug));
          }
          expect(seen).toHaveLength(total);
          expect(new Set(seen).size).toBe(total);
        },
      );

      test.each([999, 1_000_000_000_000])(
        'page %i, past the end, is 200 with empty data and truthful meta',
        async (page) => {
          const { status, body } = await get(`/v1/tools?limit=20&page=${page}`);
          expect(status).toBe(200);
          expect(body.data).toEqual([]);
          expect(body.meta).toMatchObject({
            total,
            page,
            limit: 20,
            totalPages: Math.ceil(total / 20),
          });
          expect(typeof body.meta.attribution).toBe('string');
        },
      );

      test('defaults are page 1 and limit 20, ordered by name then slug', async () => {
        const { body } = await get('/v1/tools');
        expect(body.meta).toMatchObject({ page: 1, limit: 20 });
        expect(body.data).toHaveLength(Math.min(20, total));
        const names: string[] = body.data.map((t: Json) => t.name.toLowerCase());
        expect(names).toEqual(
          [...names].sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'accent' })),
        );
      });

      test('sort by -rating orders by rating, best first', async () => {
        const { body } = await get('/v1/tools?sort=-rating&limit=100');
        const ratings: number[] = body.data.map((t: Json) => t.rating);
        expect(ratings).toEqual([...ratings].sort((a, b) => b - a));
      });
    });

    describe('categories', () => {
      test('toolCount sums to the tool total and slugs are lowercase words joined by hyphens', async () => {
        const { status, body } = await get('/v1/categories', 'free');
        expect(status).toBe(200);
        expect(body.meta.total).toBe(body.data.length);
        expect(body.data.reduce((sum: number, c: Json) => sum + c.toolCount, 0)).toBe(total);
        for (const category of body.data) {
          expect(category.slug).toMatch(SLUG_FORM);
          expect(Object.keys(category).sort()).toEqual(['name', 'slug', 'toolCount']);
        }
      });

      test('the filter matches by name and by slug, ignoring case', async () => {
        const { body } = await get('/v1/categories');
        const category = body.data[0];
        const byName = await get(
          `/v1/tools?limit=100&category=${encodeURIComponent(category.name.toUpperCase())}`,
        );
        const bySlug = await get(`/v1/tools?limit=100&category=${category.slug.toUpperCase()}`);
        expect(byName.body.meta.total).toBe(category.toolCount);
        expect(bySlug.body.data.map((t: Json) => t.slug)).toEqual(
          byName.body.data.map((t: Json) => t.slug),
        );
        expect(new Set(byName.body.data.map((t: Json) => t.category))).toEqual(
          new Set([category.name]),
        );
      });

      test('an unknown category gives an empty page', async () => {
        const { status, body } = await get('/v1/tools?category=no-such-category');
        expect(status).toBe(200);
        expect(body.meta).toMatchObject({ total: 0, totalPages: 0 });
      });
    });

    describe('search on /tools', () => {
      test('several words must all match, in name, description or tags, ignoring case', async () => {
        const [first, second] = ['OPEN', 'Source'];
        const { body } = await get(`/v1/tools?limit=100&search=${first}%20${second}`);
        expect(body.meta.total).toBeGreaterThan(0);
        for (const tool of body.data) {
          const text = [tool.name, tool.description, ...tool.tags].join(' ').toLowerCase();
          expect(text).toContain('open');
          expect(text).toContain('source');
        }
        const expected = dataset.tools.filter((t) =>
          ['open', 'source'].every((w) =>
            [t.name, t.description, ...t.tags].some((f) => f.toLowerCase().includes(w)),
          ),
        );
        expect(body.meta.total).toBe(expected.length);
      });

      test('a word no tool has gives nothing', async () => {
        const { body } = await get('/v1/tools?search=open%20zzqxv');
        expect(body.meta.total).toBe(0);
      });
    });

    describe('/search', () => {
      test('q is bounded after trimming: 200 characters between spaces are accepted', async () => {
        const words = 'ab '.repeat(66) + 'ab';
        const { status, body } = await get(`/v1/search?q=${encodeURIComponent(`  ${words}  `)}`);
        expect(words).toHaveLength(200);
        expect(status).toBe(200);
        expect(body.meta.query).toBe(words);
      });

      test('finds a tool by exact name, first, with a score', async () => {
        const tool = dataset.tools[0]!;
        const { status, body } = await get(`/v1/search?q=${encodeURIComponent(tool.name)}`, 'free');
        expect(status).toBe(200);
        expect(body.data[0].slug).toBe(tool.slug);
        expect(typeof body.data[0].score).toBe('number');
        expect(body.meta).toMatchObject({ limit: 10, query: tool.name });
      });

      test('word prefixes match', async () => {
        const tool = dataset.tools.find((t) => /^[a-z]{6,}/i.test(t.name))!;
        const prefix = tool.name.slice(0, 4);
        const { body } = await get(`/v1/search?q=${prefix}&limit=50`);
        expect(body.data.map((t: Json) => t.slug)).toContain(tool.slug);
      });

      test.each(['ide', 'assistant', 'test', 'lang', 'agent', 'vector', 'speech'])(
        'q=%s: name matches, then tag or category matches, then description matches',
        async (q) => {
          // Where the word starts a word of the field, independently of the stores' code.
          const starts = (text: string) => new RegExp(`(^|[^a-z0-9])${q}`, 'i').test(text);
          const fieldClass = (t: Json) =>
            starts(t.name)
              ? 3
              : starts(t.category) || t.tags.some(starts)
                ? 2
                : starts(t.description)
                  ? 1
                  : 0;
          const { body } = await get(`/v1/search?q=${q}&limit=50`);
          const classes: number[] = body.data.map(fieldClass);
          expect(classes.length).toBeGreaterThan(1);
          expect(classes).toEqual([...classes].sort((a, b) => b - a));
          // The score says the same: best match first.
          const scores: number[] = body.data.map((t: Json) => t.score);
          expect(scores).toEqual([...scores].sort((a, b) => b - a));
        },
      );

      test('total counts every match; data holds at most limit', async () => {
        const { body } = await get('/v1/search?q=ai&limit=2');
        expect(body.data.length).toBeLessThanOrEqual(2);
        expect(body.meta.total).toBeGreaterThanOrEqual(body.data.length);
      });
    });

    describe('/search forgives (docs/api.md#search)', () => {
      const slugsOf = (body: Json): string[] => body.data.map((t: Json) => t.slug);
      const search = async (q: string, extra = '') =>
        (await get(`/v1/search?q=${encodeURIComponent(q)}${extra}`)).body;

      test('typos: one edit in words of 5 to 8 letters, two from 9, a swap being one', async () => {
        const cases = [
          ['langchian', 'langchain'],
          ['pinceone', 'pinecone'],
          ['midjuorney', 'midjourney'],
        ];
        for (const [q, slug] of cases) {
          const first = slugsOf(await search(q!))[0];
          // The $text index cannot forgive typos: the gap docs/api.md ("Search") documents.
          if (store.searchEngine === 'text') expect(first).not.toBe(slug);
          else expect({ q, first }).toEqual({ q, first: slug });
        }
      });

      test('typos: words under 5 letters match exactly or as a prefix only', async () => {
        expect(slugsOf(await search('lnag', '&limit=50'))).not.toContain('langchain');
        expect(slugsOf(await search('lang', '&limit=50'))).toContain('langchain');
      });

      test.each(['agent', 'vector', 'speech', 'model'])(
        'q=%s: exact and prefix matches outrank every other match',
        async (q) => {
          const startsAWord = new RegExp(`(^|[^a-z0-9])${q}`, 'i');
          const { data } = await search(q, '&limit=50');
          const strong: boolean[] = data.map((t: Json) =>
            [t.name, t.category, t.description, ...t.tags].some((f) => startsAWord.test(f)),
          );
          expect(strong.length).toBeGreaterThan(1);
          expect(strong).toEqual([...strong].sort((a, b) => Number(b) - Number(a)));
        },
      );

      test('spacing: a name written apart or together is found either way', async () => {
        expect(slugsOf(await search('open ai')).slice(0, 3)).toContain('openai-api');
        expect(slugsOf(await search('lang chain'))[0]).toBe('langchain');
        expect(
          slugsOf(await search('huggingface'))
            .slice(0, 2)
            .sort(),
        ).toEqual(['hugging-face-hub', 'hugging-face-transformers']);
        expect(slugsOf(await search('llamacpp'))[0]).toBe('llama-cpp');
      });

      test('synonyms: tts, stt and rag find what their phrases name', async () => {
        const tagged = async (q: string, tag: string) =>
          (await search(q, '&limit=3')).data.every((t: Json) => t.tags.includes(tag));
        expect(await tagged('tts', 'text-to-speech')).toBe(true);
        expect(await tagged('stt', 'speech-to-text')).toBe(true);
        expect(await tagged('retrieval augmented generation', 'rag')).toBe(true);
        expect(await tagged('large language model', 'llm')).toBe(true);
      });

      test('facets: every match by category, most first, ties by name, summing to total', async () => {
        const { meta } = await search('vector', '&limit=1');
        const facets: Json[] = meta.facets.category;
        expect(facets.length).toBeGreaterThan(1);
        for (const facet of facets) {
          expect(Object.keys(facet).sort()).toEqual(['count', 'name', 'slug']);
          expect(facet.slug).toMatch(SLUG_FORM);
        }
        const order = [...facets].sort(
          (a, b) =>
            b.count - a.count || a.name.localeCompare(b.name, 'en', { sensitivity: 'accent' }),
        );
        expect(facets).toEqual(order);
        expect(facets.reduce((sum, f) => sum + f.count, 0)).toBe(meta.total);
      });

      test('category by name or slug, any case: only its matches, facets as before', async () => {
        const all = await search('open source', '&limit=50');
        const top: Json = all.meta.facets.category[0];
        for (const wanted of [top.name.toUpperCase(), top.slug, top.slug.toUpperCase()]) {
          const { data, meta } = await search(
            'open source',
            `&limit=50&category=${encodeURIComponent(wanted)}`,
          );
          expect(meta).toMatchObject({ total: top.count, category: wanted });
          expect(meta.facets).toEqual(all.meta.facets);
          expect(data.length).toBe(Math.min(top.count, 50));
          expect(new Set(data.map((t: Json) => t.category))).toEqual(new Set([top.name]));
          // Within the category, the order is the unfiltered order.
          const unfiltered = slugsOf(all).filter((slug) => data.some((t: Json) => t.slug === slug));
          expect(slugsOf({ data }).slice(0, unfiltered.length)).toEqual(unfiltered);
        }
      });

      test('an unknown category is 200 with no data and the facets of every match', async () => {
        const { data, meta } = await search('vector', '&category=no-such-category');
        expect(data).toEqual([]);
        expect(meta.total).toBe(0);
        expect(meta.facets.category.length).toBeGreaterThan(0);
      });
    });

    describe('validation', () => {
      test.each([
        ['/v1/tools?limit=0', 'limit', '1 to 100'],
        ['/v1/tools?limit=101', 'limit', '1 to 100'],
        ['/v1/tools?limit=abc', 'limit', '1 to 100'],
        ['/v1/tools?page=0', 'page', '1 to 9007199254740991'],
        ['/v1/tools?page=99999999999999999999', 'page', '1 to 9007199254740991'],
        ['/v1/tools?page=1.5', 'page', ''],
        ['/v1/tools?sort=price', 'sort', 'name'],
        ['/v1/search', 'q', '2 to 200'],
        ['/v1/search?q=a', 'q', '2 to 200'],
        ['/v1/search?q=%20a%20%20', 'q', '2 to 200 characters after trimming'],
        [`/v1/search?q=${'x'.repeat(201)}`, 'q', '2 to 200'],
        ['/v1/search?q=ai&limit=51', 'limit', '1 to 50'],
        [`/v1/search?q=ai&category=${'x'.repeat(101)}`, 'category', '1 to 100'],
      ])('%s is 400 naming %s', async (url, parameter, range) => {
        const { status, body } = await get(url);
        expect(status).toBe(400);
        expect(Object.keys(body)).toEqual(['error']);
        expect(body.error).toContain(`'${parameter}'`);
        expect(body.error).toContain(range);
      });

      test('an unknown slug is 404 naming the slug', async () => {
        const { status, body } = await get('/v1/tools/no-such-tool');
        expect(status).toBe(404);
        expect(body).toEqual({ error: "Tool 'no-such-tool' not found" });
      });

      test('an unknown path is a JSON 404', async () => {
        const { status, body } = await get('/v2/tools');
        expect(status).toBe(404);
        expect(typeof body.error).toBe('string');
      });
    });

    describe('tiers', () => {
      const slug = dataset.tools[0]!.slug;
      const other = dataset.tools[1]!.slug;

      test.each([
        ['list', '/v1/tools?limit=5', (b: Json) => b.data],
        ['detail', `/v1/tools/${slug}`, (b: Json) => [b.data]],
        [
          'search',
          '/v1/search?q=ai',
          (b: Json) => b.data.map(({ score: _score, ...t }: Json) => t),
        ],
      ])(
        'Free gets exactly the basic fields and updatedAt on %s; paid tiers every paid field too',
        async (_name, url, records) => {
          const free = records((await get(url, 'free')).body);
          expect(free.length).toBeGreaterThan(0);
          for (const tool of free) expect(Object.keys(tool).sort()).toEqual(FREE_FIELDS);
          for (const tier of ['pro', 'enterprise'] as const) {
            for (const tool of records((await get(url, tier)).body)) {
              expect(Object.keys(tool).sort()).toEqual([...FREE_FIELDS, ...PAID_FIELDS].sort());
            }
          }
        },
      );

      test('compare is 403 for Free, with the basic-fields-only rule never reached', async () => {
        const { status, body } = await get(`/v1/compare/${slug}/${other}`, 'free');
        expect(status).toBe(403);
        expect(body.error).toMatch(/Pro or Enterprise/);
      });

      test('compare checks the tier first: invalid slugs from a Free key are still 403', async () => {
        expect((await get(`/v1/compare/${slug}/${slug}`, 'free')).status).toBe(403);
        expect((await get(`/v1/compare/${'x'.repeat(101)}/${other}`, 'free')).status).toBe(403);
      });

      test('compare gives paid tiers both full tools and the comparison', async () => {
        const { status, body } = await get(`/v1/compare/${slug}/${other}`, 'enterprise');
        expect(status).toBe(200);
        expect(body.data.tools.map((t: Json) => t.slug)).toEqual([slug, other]);
        for (const tool of body.data.tools)
          expect(Object.keys(tool)).toEqual(expect.arrayContaining(PAID_FIELDS));
        expect(body.data.comparison).toEqual(
          expect.objectContaining({
            ratingDifference: expect.any(Number),
            sameCategory: expect.any(Boolean),
            sharedTags: expect.any(Array),
            uniqueTags: { [slug]: expect.any(Array), [other]: expect.any(Array) },
            pricing: { [slug]: expect.any(String), [other]: expect.any(String) },
          }),
        );
        expect(typeof body.meta.attribution).toBe('string');
      });

      test('compare: the same slug twice is 400, an unknown slug 404', async () => {
        expect((await get(`/v1/compare/${slug}/${slug}`)).status).toBe(400);
        const missing = await get(`/v1/compare/${slug}/no-such-tool`);
        expect(missing.status).toBe(404);
        expect(missing.body.error).toBe("Tool 'no-such-tool' not found");
      });
    });

    describe('updatedAt and updatedSince', () => {
      /** Every tool, oldest change first, through `sort=updatedAt` pages of `limit`. */
      async function byChange(query = '', limit = 100): Promise<Json[]> {
        const tools: Json[] = [];
        for (let page = 1; ; page++) {
          const { status, body } = await get(
            `/v1/tools?sort=updatedAt&limit=${limit}&page=${page}${query}`,
          );
          expect(status).toBe(200);
          tools.push(...body.data);
          if (page >= body.meta.totalPages) return tools;
        }
      }

      test('every tool has its own updatedAt, written as UTC with milliseconds', async () => {
        const tools = await byChange();
        expect(tools).toHaveLength(total);
        for (const tool of tools) expect(tool.updatedAt).toMatch(INSTANT_FORM);
        expect(new Set(tools.map((t) => t.updatedAt)).size).toBe(total);
      });

      test('sort=updatedAt is oldest change first, -updatedAt its exact reverse', async () => {
        const oldest = await byChange('', 7);
        const instants = oldest.map((t) => t.updatedAt as string);
        expect(instants).toEqual([...instants].sort());
        const newest: Json[] = [];
        for (let page = 1; page <= Math.ceil(total / 100); page++) {
          newest.push(...(await get(`/v1/tools?sort=-updatedAt&limit=100&page=${page}`)).body.data);
        }
        expect(newest.map((t) => t.slug)).toEqual(oldest.map((t) => t.slug).reverse());
      });

      test('updatedSince lists exactly the tools changed after the instant, not at it', async () => {
        const all = await byChange();
        for (const index of [0, 5, Math.floor(total / 2), total - 2, total - 1]) {
          const since = all[index]!.updatedAt as string;
          const after = await byChange(`&updatedSince=${since}`, 20);
          expect(after.map((t) => t.slug)).toEqual(all.slice(index + 1).map((t) => t.slug));
          const { body } = await get(`/v1/tools?updatedSince=${since}&limit=1`);
          expect(body.meta).toMatchObject({ total: total - index - 1, page: 1, limit: 1 });
        }
      });

      test('updatedSince combines with category, search, sort and pagination', async () => {
        const all = await byChange();
        const since = all[Math.floor(total / 3)]!.updatedAt as string;
        const later = (t: Json) => t.updatedAt > since;
        const { body: categories } = await get('/v1/categories');
        for (const category of categories.data.slice(0, 4) as Json[]) {
          const { body } = await get(
            `/v1/tools?category=${category.slug}&updatedSince=${since}&sort=-rating&limit=100`,
          );
          const expected = all.filter((t) => t.category === category.name && later(t));
          expect(body.meta.total).toBe(expected.length);
          expect(body.data.map((t: Json) => t.slug).sort()).toEqual(
            expected.map((t) => t.slug).sort(),
          );
          const ratings: number[] = body.data.map((t: Json) => t.rating);
          expect(ratings).toEqual([...ratings].sort((a, b) => b - a));
        }
        const { body } = await get(`/v1/tools?search=open&updatedSince=${since}&limit=100`);
        const matching = all.filter(
          (t) =>
            later(t) &&
            [t.name, t.description, ...t.tags].some((f: string) =>
              f.toLowerCase().includes('open'),
            ),
        );
        expect(body.meta.total).toBe(matching.length);
        expect(body.data.every(later)).toBe(true);
        // Pages of the default order, by name, hold each of them once.
        const paged: string[] = [];
        for (let page = 1; page <= Math.ceil((total - Math.floor(total / 3) - 1) / 9); page++) {
          const next = await get(`/v1/tools?updatedSince=${since}&limit=9&page=${page}`);
          paged.push(...next.body.data.map((t: Json) => t.slug));
        }
        expect(paged.sort()).toEqual(
          all
            .filter(later)
            .map((t) => t.slug)
            .sort(),
        );
      });

      test('an instant in any RFC 3339 form, offset or fraction, means the same instant', async () => {
        const all = await byChange();
        const index = Math.floor(total / 2);
        const instant = new Date(all[index]!.updatedAt as string);
        const expected = all.slice(index + 1).map((t) => t.slug);
        const plus2 = new Date(instant.getTime() + 2 * 3_600_000).toISOString().slice(0, 23);
        const forms = [
          instant.toISOString(),
          instant.toISOString().toLowerCase(),
          instant.toISOString().replace('T', ' '),
          `${plus2}+02:00`,
          `${plus2}+0200`,
          `${plus2}+02`,
          // Fractions of a millisecond after it: still not after its millisecond's end.
          instant.toISOString().replace('Z', '999Z'),
        ];
        for (const form of forms) {
          const after = await byChange(`&updatedSince=${encodeURIComponent(form)}`);
          expect({ form, slugs: after.map((t) => t.slug) }).toEqual({ form, slugs: expected });
        }
        const secondBefore = new Date(instant.getTime() - 1).toISOString();
        expect((await byChange(`&updatedSince=${secondBefore}`)).length).toBe(total - index);
      });

      test('the earliest and the latest instants: everything, then nothing', async () => {
        for (const since of ['0000-01-01T00:00:00Z', '1970-01-01T00:00:00Z']) {
          expect((await get(`/v1/tools?updatedSince=${since}`)).body.meta.total).toBe(total);
        }
        // A year past 9999 once the offset is applied is still later than every tool.
        for (const since of ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59-23:59']) {
          const { status, body } = await get(`/v1/tools?updatedSince=${encodeURIComponent(since)}`);
          expect(status).toBe(200);
          expect(body.meta).toMatchObject({ total: 0, totalPages: 0 });
        }
      });

      test.each([
        'yesterday',
        '2025-06-30',
        '2025-06-30T12:00:00',
        '2025-06-30T12:00Z',
        '2025-02-29T12:00:00Z',
        '2025-06-31T12:00:00Z',
        '2025-06-30T24:00:00Z',
        '2025-06-30T12:00:60Z',
        '2025-06-30T12:00:00+24:00',
        '1751284800',
        '+2025-06-30T12:00:00Z',
        // `+` unencoded in a URL is a space: the offset is lost.
        '2025-06-30T12:00:00 02:00',
        '',
      ])('updatedSince=%s is 400 naming the parameter and the format', async (since) => {
        const { status, body } = await get(`/v1/tools?updatedSince=${encodeURIComponent(since)}`);
        expect(status).toBe(400);
        expect(body).toEqual({
          error:
            "Invalid query parameter 'updatedSince': must be an ISO 8601 date-time with a time zone (RFC 3339), e.g. 2025-06-30T12:00:00Z",
        });
      });

      test('a leap second is the last second of a UTC day', async () => {
        const all = await byChange();
        const expected = all.filter((t) => t.updatedAt >= '2017-01-01T00:00:00.000Z').length;
        for (const since of ['2016-12-31T23:59:60Z', '2017-01-01T00:59:60+01:00']) {
          const { status, body } = await get(`/v1/tools?updatedSince=${encodeURIComponent(since)}`);
          expect(status).toBe(200);
          expect(body.meta.total).toBe(expected);
        }
      });

      test('the same updatedAt on every endpoint and tier, and in the export', async () => {
        const all = new Map((await byChange()).map((t) => [t.slug, t.updatedAt]));
        const [first, second] = [...all.keys()];
        const checked = [
          ...(await get('/v1/tools?limit=5', 'free')).body.data,
          (await get(`/v1/tools/${first}`, 'free')).body.data,
          (await get(`/v1/tools/${first}`, 'enterprise')).body.data,
          ...(await get('/v1/search?q=agent', 'free')).body.data,
          ...(await get(`/v1/compare/${first}/${second}`, 'pro')).body.data.tools,
        ];
        for (const tool of checked) expect(tool.updatedAt).toBe(all.get(tool.slug));
        const exported = await app.inject({ url: '/v1/export', headers: asTier('enterprise') });
        const lines = exported.body
          .trimEnd()
          .split('\n')
          .map((line) => JSON.parse(line) as Json);
        expect(lines).toHaveLength(total);
        for (const tool of lines) expect(tool.updatedAt).toBe(all.get(tool.slug));
      });
    });

    describe('bulk export (docs/api.md#authentication-errors, docs/api.md#enterprise-export-and-webhooks)', () => {
      async function download(format: string, tier: 'free' | 'pro' | 'enterprise' = 'enterprise') {
        const res = await app.inject({ url: `/v1/export?format=${format}`, headers: asTier(tier) });
        return { status: res.statusCode, headers: res.headers, text: res.body };
      }
      /** Every tool in /tools order (name, then slug), with all its data. */
      async function everyTool(): Promise<Json[]> {
        const pageNumbers = Array.from({ length: Math.ceil(total / 100) }, (_, i) => i + 1);
        const pages = await Promise.all(
          pageNumbers.map(
            async (page) => (await get(`/v1/tools?limit=100&page=${page}`)).body.data,
          ),
        );
        return pages.flat();
      }

      test.each(['free', 'pro'] as const)(
        'is 403 for a %s key, naming Enterprise',
        async (tier) => {
          const { status, text } = await download('ndjson', tier);
          expect(status).toBe(403);
          expect(JSON.parse(text)).toEqual({ error: 'This endpoint needs an Enterprise key' });
        },
      );

      test('the tier is checked first: an invalid format from a Pro key is still 403', async () => {
        expect((await download('xml', 'pro')).status).toBe(403);
      });

      test('ndjson by default: every tool once, by name, each with every field of the full record', async () => {
        const res = await app.inject({ url: '/v1/export', headers: asTier('enterprise') });
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
        expect(res.headers['content-disposition']).toBe(
          'attachment; filename="tool-directory.ndjson"',
        );
        expect(res.body.endsWith('\n')).toBe(true);
        const records = res.body
          .trimEnd()
          .split('\n')
          .map((line) => JSON.parse(line) as Json);
        expect(records).toEqual(await everyTool());
        expect(records).toHaveLength(total);
        for (const tool of records)
          expect(Object.keys(tool).sort()).toEqual([...FREE_FIELDS, ...PAID_FIELDS].sort());
      });

      test('json: the usual envelope, with total and attribution', async () => {
        const { status, headers, text } = await download('json');
        expect(status).toBe(200);
        expect(headers['content-type']).toBe('application/json; charset=utf-8');
        const body = JSON.parse(text) as Json;
        expect(body.data).toEqual(await everyTool());
        expect(body.meta).toEqual({ total, attribution: dataset.meta.attribution });
      });

      test('csv: a header row, one row per tool, lists and objects as JSON cells, nothing lost', async () => {
        const { status, headers, text } = await download('csv');
        expect(status).toBe(200);
        expect(headers['content-type']).toBe('text/csv; charset=utf-8');
        expect(headers['content-disposition']).toBe('attachment; filename="tool-directory.csv"');
        const [header, ...rows] = parseCsv(text) as string[][];
        expect([...header!].sort()).toEqual([...FREE_FIELDS, ...PAID_FIELDS].sort());
        const tools = await everyTool();
        expect(rows).toHaveLength(total);
        rows.forEach((row, i) => {
          const tool = tools[i]!;
          header!.forEach((column, j) => {
            const value = tool[column];
            const cell = row[j]!;
            if (typeof value === 'object') expect(JSON.parse(cell)).toEqual(value);
            else expect(cell).toBe(String(value));
          });
        });
      });

      test('an unknown format is 400 naming the parameter and the formats', async () => {
        const { status, text } = await download('xml');
        expect(status).toBe(400);
        expect(JSON.parse(text).error).toBe(
          "Invalid query parameter 'format': must be one of ndjson, json, csv",
        );
      });
    });

    describe('operator injection is inert', () => {
      test('category[$ne]=… is not an operator', async () => {
        const { status, body } = await get('/v1/tools?category[$ne]=nothing&limit=100');
        expect(status).toBe(200);
        expect(body.meta.total).toBe(total);
      });

      test('a JSON operator as a value is plain text', async () => {
        const value = encodeURIComponent('{"$gt":""}');
        for (const url of [
          `/v1/tools?category=${value}`,
          `/v1/tools?search=${value}`,
          `/v1/tools/${value}`,
        ]) {
          const { status, body } = await get(url);
          expect([200, 404]).toContain(status);
          if (status === 200) expect(body.meta.total).toBe(0);
        }
      });

      test.each(['.*', '(a+)+$', '[', 'ai|ml', '\\'])(
        'regex characters in q (%s) match literally',
        async (q) => {
          const { status } = await get(`/v1/search?q=${encodeURIComponent(q + 'zz')}`);
          expect(status).toBe(200);
          const list = await get(`/v1/tools?search=${encodeURIComponent(q)}`);
          expect(list.status).toBe(200);
          expect(list.body.meta.total).toBeLessThan(total);
        },
      );
    });

    describe('internal secret', () => {
      test.each([
        ['no headers', {}],
        ['a tier without the token', { 'x-caller-tier': 'enterprise' }],
        [
          'a wrong token',
          { 'x-internal-token': 'wrong-token-wrong-token!', 'x-caller-tier': 'pro' },
        ],
      ])('%s is refused with 401', async (_name, headers) => {
        const res = await app.inject({ url: '/v1/tools', headers });
        expect(res.statusCode).toBe(401);
        expect(Object.keys(res.json())).toEqual(['error']);
      });

      test('health endpoints need no secret', async () => {
        expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);
        expect((await app.inject({ url: '/readyz' })).statusCode).toBe(200);
      });
    });

    // Last: it changes tools (and puts them back afterwards).
    describe('source, verifiedAt and verifiedBefore', () => {
      /** When the bundled dataset's facts were compiled: every bundled tool's verifiedAt. */
      const compiled = `${dataset.meta.pricingAsOf}T00:00:00.000Z`;

      /** The slugs of every tool verified before `instant`, through pages of `limit`. */
      async function before(instant: string, query = '', limit = 100): Promise<string[]> {
        const slugs: string[] = [];
        for (let page = 1; ; page++) {
          const { status, body } = await get(
            `/v1/tools?verifiedBefore=${encodeURIComponent(instant)}&limit=${limit}&page=${page}${query}`,
          );
          expect(status).toBe(200);
          slugs.push(...body.data.map((t: Json) => t.slug));
          if (page >= body.meta.totalPages) return slugs;
        }
      }

      test('every tool carries the source and verifiedAt of its record, on every tier', async () => {
        const bySlug = new Map(dataset.tools.map((tool) => [tool.slug, tool]));
        for (const tier of ['free', 'pro'] as const) {
          for (let page = 1; page <= Math.ceil(total / 100); page++) {
            const { body } = await get(`/v1/tools?limit=100&page=${page}`, tier);
            for (const tool of body.data as Json[]) {
              const record = bySlug.get(tool.slug)!;
              expect(tool).toMatchObject({ source: record.source, verifiedAt: compiled });
              expect(tool.source).toMatch(/^https?:\/\//);
              expect(tool.verifiedAt).toMatch(INSTANT_FORM);
            }
          }
        }
      });

      test('verifiedBefore lists the tools verified before the instant, not at it', async () => {
        expect(await before(compiled)).toEqual([]);
        const after = new Date(Date.parse(compiled) + 1).toISOString();
        const all = await before(after, '', 40);
        expect(all).toHaveLength(total);
        expect(new Set(all).size).toBe(total);
        // Any RFC 3339 form of the same instant means the same.
        expect(await before('2025-06-30T02:00:00.001+02:00')).toHaveLength(total);
        expect(await before('2025-06-30 00:00:00Z')).toEqual([]);
        expect(await before('0000-01-01T00:00:00Z')).toEqual([]);
      });

      test.each(['last-month', '2025-06-30', '2025-06-30T12:00:00', '2025-06-31T00:00:00Z', ''])(
        'verifiedBefore=%s is 400 naming the parameter and the format',
        async (instant) => {
          const { status, body } = await get(
            `/v1/tools?verifiedBefore=${encodeURIComponent(instant)}`,
          );
          expect(status).toBe(400);
          expect(body).toEqual({
            error:
              "Invalid query parameter 'verifiedBefore': must be an ISO 8601 date-time with a time zone (RFC 3339), e.g. 2025-06-30T12:00:00Z",
          });
        },
      );

      describe('once some tools are checked again', () => {
        const categories = [...new Set(dataset.tools.map((tool) => tool.category))];
        const inCategory = (i: number) => dataset.tools.filter((t) => t.category === categories[i]);
        // Two tools of one category and one of another, checked long ago, lately and just now.
        const [oldest, older] = inCategory(0) as [Tool, Tool];
        const [recent] = inCategory(1) as [Tool];
        const checks: [Tool, string][] = [
          [oldest, '2024-01-15T00:00:00.000Z'],
          [older, '2025-03-01T12:00:00.000Z'],
          [recent, '2025-09-01T00:00:00.000Z'],
        ];
        let changedSince: string;

        beforeAll(async () => {
          const latest = await get('/v1/tools?sort=-updatedAt&limit=1');
          changedSince = latest.body.data[0].updatedAt;
          const summary = await store.upsert(
            checks.map(([tool, verifiedAt]) => ({ ...tool, verifiedAt })),
          );
          // A change of provenance is a change like any other.
          expect(summary.updated).toEqual(
            checks.map(([tool]) => ({ slug: tool.slug, changedFields: ['verifiedAt'] })),
          );
        });
        afterAll(async () => {
          await store.upsert(checks.map(([tool]) => tool));
        });

        test('each tool is listed until its verifiedAt, and served with it', async () => {
          expect((await before(compiled)).sort()).toEqual([oldest.slug, older.slug].sort());
          expect(await before('2025-03-01T12:00:00.000Z')).toEqual([oldest.slug]);
          expect(await before('2025-03-01T12:00:00.001Z')).toHaveLength(2);
          const later = await before('2025-06-30T00:00:00.001Z');
          expect(later).toHaveLength(total - 1);
          expect(later).not.toContain(recent.slug);
          expect(await before('2025-09-01T00:00:00.001Z')).toHaveLength(total);
          for (const [tool, verifiedAt] of checks) {
            const { body } = await get(`/v1/tools/${tool.slug}`, 'free');
            expect(body.data).toMatchObject({ source: tool.source, verifiedAt });
          }
        });

        test('verifiedBefore combines with category, search, updatedSince, sort and pages', async () => {
          const cutoff = encodeURIComponent('2025-09-01T00:00:00.001Z');
          const { body: other } = await get(
            `/v1/tools?verifiedBefore=${cutoff}&category=${encodeURIComponent(recent.category)}&limit=100`,
          );
          expect(other.data.map((t: Json) => t.slug)).toContain(recent.slug);
          expect(other.meta.total).toBe(inCategory(1).length);
          const { body: sameCategory } = await get(
            `/v1/tools?verifiedBefore=${compiled}&category=${encodeURIComponent(oldest.category)}&sort=-rating`,
          );
          expect(sameCategory.meta.total).toBe(2);
          const ratings = sameCategory.data.map((t: Json) => t.rating as number);
          expect(ratings).toEqual([...ratings].sort((a, b) => b - a));
          const { body: searched } = await get(
            `/v1/tools?verifiedBefore=${compiled}&search=${encodeURIComponent(oldest.name)}`,
          );
          expect(searched.data.map((t: Json) => t.slug)).toContain(oldest.slug);
          expect(searched.data.every((t: Json) => t.verifiedAt < compiled)).toBe(true);
          const { body: changed } = await get(
            `/v1/tools?verifiedBefore=${cutoff}&updatedSince=${changedSince}&sort=updatedAt`,
          );
          expect(changed.data.map((t: Json) => t.slug)).toEqual(checks.map(([tool]) => tool.slug));
          // Pages of one: each of the two once, in the order asked for.
          const byName = await before(compiled);
          expect(await before(compiled, '&sort=-name', 1)).toEqual([...byName].reverse());
        });
      });
    });
  });
}
