import {
  ATLAS_CANDIDATES,
  RANK_PROJECTION,
  SEARCH_INDEX_NAME,
  SYNONYMS_COLLECTION,
  SYNONYM_MAPPING,
  atlasCandidatesPipeline,
  atlasFacetsPipeline,
  definitionHolds,
  facetCounts,
  searchIndexDefinition,
  synonymDocuments,
  synonymWrites,
} from '../../../../services/catalog/src/store/search/atlas-search';
import {
  prefixFallbackFilter,
  textSearchFilter,
} from '../../../../services/catalog/src/store/mongo-queries';
import { planSearch } from '../../../../services/catalog/src/store/search/search-plan';
import { bundledSynonyms } from '../../../../services/catalog/src/store/search/synonyms';

/**
 * The MongoDB search documents (docs/api.md#search), checked as documents: no MongoDB server runs
 * here. `test/catalog/routes/catalog-contract.ts` runs them against a real one when MONGODB_URI is
 * set.
 */

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const synonyms = bundledSynonyms();
const plan = (text: string) => planSearch(text, synonyms);
const LIVE = { deleted: { $ne: true } };

describe('the $text path', () => {
  test('searches the words, the words run together and the synonyms’ words', () => {
    expect(textSearchFilter(plan('open ai'), synonyms)).toEqual({
      ...LIVE,
      $text: { $search: 'open openai' },
    });
    const tts = (textSearchFilter(plan('tts'), synonyms) as Json).$text.$search.split(' ');
    expect(tts).toEqual(expect.arrayContaining(['tts', 'text', 'speech', 'synthesis']));
  });

  test('no user text reaches $text as a negation, a phrase or an operator', () => {
    const filter = textSearchFilter(plan('-vector "db" {"$gt":""}'), synonyms) as Json;
    expect(filter.$text.$search).toMatch(/^[a-z0-9 ]+$/);
  });

  test('the fallback finds word prefixes in name, tags and category, and names however spaced', () => {
    const filter = prefixFallbackFilter(plan('Lang huggingface')) as Json;
    expect(filter.deleted).toEqual(LIVE.deleted);
    const regexes = (field: string) =>
      filter.$or
        .filter((clause: Json) => Object.keys(clause)[0] === field)
        .map((clause: Json) => new RegExp(clause[field].$regex, clause[field].$options) as RegExp);
    const matches = (field: string, value: string) =>
      regexes(field).some((r: RegExp) => r.test(value));
    expect(matches('name', 'LangChain')).toBe(true);
    expect(matches('tags', 'langchain-integration')).toBe(true);
    expect(matches('category', 'Lang Tools')).toBe(true);
    expect(matches('name', 'Slang')).toBe(false);
    expect(matches('name', 'Hugging Face Transformers')).toBe(true);
    expect(matches('name', 'Hugging Faces')).toBe(true);
    expect(matches('name', 'The Hug')).toBe(false);
  });
});

describe('the Atlas Search index definition (data/atlas-search-index.json)', () => {
  const definition = searchIndexDefinition();
  const fields = definition.mappings.fields as Json;
  const types = (field: string) => [fields[field]].flat().map((mapping: Json) => mapping.type);

  test('maps only the fields searched, filtered and faceted', () => {
    expect(definition.mappings.dynamic).toBe(false);
    expect(Object.keys(fields).sort()).toEqual(
      ['category', 'categorySlug', 'deleted', 'description', 'name', 'tags'].sort(),
    );
    expect(types('name')).toEqual(['string', 'autocomplete']);
    // Facets and equality need `token`.
    expect(types('category')).toEqual(['string', 'token']);
    expect(types('categorySlug')).toEqual(['token']);
    expect(types('deleted')).toEqual(['boolean']);
  });

  test('the name is also indexed run together, by an analyzer the definition declares', () => {
    const compact = fields.name[0].multi.compact;
    expect(compact.type).toBe('string');
    const analyzer = definition.analyzers.find((a: Json) => a.name === compact.analyzer);
    expect(analyzer.tokenizer).toEqual({ type: 'keyword' });
    expect(analyzer.tokenFilters).toContainEqual(
      expect.objectContaining({ type: 'regex', replacement: '', matches: 'all' }),
    );
  });

  test('synonyms come from the synonyms collection, analyzed like the fields they apply to', () => {
    expect(definition.synonyms).toEqual([
      {
        name: SYNONYM_MAPPING,
        analyzer: fields.description.analyzer,
        source: { collection: SYNONYMS_COLLECTION },
      },
    ]);
    for (const field of ['tags', 'description']) {
      expect(fields[field].analyzer).toBe(definition.synonyms[0].analyzer);
    }
  });

  test('the synonyms collection holds data/synonyms.json as equivalent mappings', () => {
    const documents = synonymDocuments(synonyms);
    expect(documents).toHaveLength(synonyms.groups.length);
    expect(documents).toContainEqual({
      _id: expect.any(String),
      mappingType: 'equivalent',
      synonyms: expect.arrayContaining(['tts', 'text to speech']),
    });
    // Replaced one by one, then the rest deleted: the collection is never empty on the way.
    const writes = synonymWrites(synonyms);
    expect(writes.slice(0, -1)).toEqual(
      documents.map((d) => ({
        replaceOne: { filter: { _id: d._id }, replacement: d, upsert: true },
      })),
    );
    expect(writes.at(-1)).toEqual({
      deleteMany: { filter: { _id: { $nin: documents.map((d) => d._id) } } },
    });
  });

  test('a definition Atlas reports with its defaults added still holds ours; a change does not', () => {
    const ours = searchIndexDefinition();
    const reported = structuredClone(ours);
    reported.storedSource = false;
    reported.mappings.fields.tags.indexOptions = 'offsets';
    expect(definitionHolds(reported, ours)).toBe(true);
    reported.mappings.fields.name[1].maxGrams = 10;
    expect(definitionHolds(reported, ours)).toBe(false);
    expect(definitionHolds(undefined, ours)).toBe(false);
  });
});

describe('the Atlas Search pipelines', () => {
  const searchStage = (text: string, category?: string) =>
    atlasCandidatesPipeline(text, plan(text), category)[0]!.$search as Json;
  const should = (text: string) => searchStage(text).compound.should as Json[];
  const operators = (text: string, name: string) =>
    should(text)
      .filter((clause) => name in clause)
      .map((clause) => clause[name]);

  test('$search on the named index, live tools only, the best candidates with their score', () => {
    const pipeline = atlasCandidatesPipeline('vector db', plan('vector db'));
    expect(pipeline[0]!.$search.index).toBe(SEARCH_INDEX_NAME);
    expect(pipeline[0]!.$search.compound.mustNot).toEqual([
      { equals: { path: 'deleted', value: true } },
    ]);
    expect(pipeline[0]!.$search.compound.minimumShouldMatch).toBe(1);
    expect(pipeline.slice(1)).toEqual([
      { $limit: ATLAS_CANDIDATES },
      { $project: { ...RANK_PROJECTION, score: { $meta: 'searchScore' } } },
    ]);
  });

  test('the exact name, run together, weighs most; its prefix catches names spaced apart', () => {
    const [exact] = operators('Open AI', 'text');
    expect(exact).toEqual({
      query: 'Open AI',
      path: { value: 'name', multi: 'compact' },
      score: { boost: { value: 100 } },
    });
    expect(operators('Hugging Face', 'wildcard')).toEqual([
      expect.objectContaining({ query: 'huggingface*', path: { value: 'name', multi: 'compact' } }),
    ]);
    expect(operators('autocomplete', 'autocomplete')[0].path).toBe('name');
  });

  test('each field is searched with the synonyms, weighted name > tags > category > description', () => {
    const withSynonyms = operators('tts', 'text').filter((t) => t.synonyms === SYNONYM_MAPPING);
    expect(withSynonyms.map((t) => [t.path, t.score.boost.value])).toEqual([
      ['name', 10],
      ['tags', 5],
      ['category', 4],
      ['description', 1],
    ]);
    for (const clause of withSynonyms) expect(clause.matchCriteria).toBe('any');
  });

  test('typos: one edit for words of 5 to 8 letters, two from 9, none under 5', () => {
    const fuzzy = (text: string) =>
      operators(text, 'text')
        .filter((t) => t.fuzzy)
        .map((t) => [t.query, t.fuzzy.maxEdits]);
    expect(fuzzy('langchian rag pinceone')).toEqual([
      ['langchian', 2],
      ['pinceone', 1],
    ]);
    // Synonyms and fuzzy cannot share a text operator.
    for (const clause of operators('langchian', 'text')) {
      expect(clause.fuzzy && clause.synonyms).toBeFalsy();
    }
  });

  test('several words also match as a phrase, in order', () => {
    expect(operators('text to speech', 'phrase')).toEqual([
      expect.objectContaining({ query: 'text to speech' }),
    ]);
    expect(operators('speech', 'phrase')).toEqual([]);
  });

  test('category filters by slug, from a name or a slug in any case', () => {
    expect(searchStage('db', 'Vector Databases').compound.filter).toEqual([
      { equals: { path: 'categorySlug', value: 'vector-databases' } },
    ]);
    expect(searchStage('db', 'VECTOR-DATABASES').compound.filter).toEqual(
      searchStage('db', 'vector databases').compound.filter,
    );
    expect(searchStage('db').compound.filter).toBeUndefined();
  });

  test('$searchMeta counts every match and each category, before the category filter', () => {
    const [stage] = atlasFacetsPipeline('vector db', plan('vector db'));
    expect(stage!.$searchMeta).toEqual({
      index: SEARCH_INDEX_NAME,
      facet: {
        operator: { compound: expect.objectContaining({ should: should('vector db') }) },
        facets: { category: { type: 'string', path: 'category', numBuckets: 1000 } },
      },
      count: { type: 'total' },
    });
    expect(stage!.$searchMeta.facet.operator.compound.filter).toBeUndefined();
    expect(
      facetCounts({ facet: { category: { buckets: [{ _id: 'Vector Databases', count: 7 }] } } }),
    ).toEqual([['Vector Databases', 7]]);
    expect(facetCounts(undefined)).toEqual([]);
  });

  test('every path the pipelines use is in the index definition', () => {
    const mapped = new Set(Object.keys(searchIndexDefinition().mappings.fields));
    const paths = JSON.stringify([
      atlasCandidatesPipeline('langchian text to speech', plan('langchian text to speech'), 'x'),
      atlasFacetsPipeline('a', plan('a')),
    ]).matchAll(/"path":(\{"value":"(\w+)"|\["?([\w",]+)\]|"(\w+)")/g);
    const used = new Set(
      [...paths].flatMap((match) =>
        (match[2] ?? match[3] ?? match[4] ?? '').replace(/"/g, '').split(','),
      ),
    );
    expect([...used].sort()).toEqual(
      ['category', 'categorySlug', 'deleted', 'description', 'name', 'tags'].sort(),
    );
    for (const name of used) expect(mapped).toContain(name);
  });
});
