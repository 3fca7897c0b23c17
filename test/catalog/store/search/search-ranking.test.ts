import type { Tool } from '../../../../services/catalog/src/schemas/tool';
import { CatalogSnapshot } from '../../../../services/catalog/src/store/catalog-snapshot';
import { stamped } from '../../../../services/catalog/src/store/change-clock';
import { Synonyms } from '../../../../services/catalog/src/store/search/synonyms';
import { newTool } from '../../../support/catalog';

/**
 * docs/api.md#search on the embedded engine, over small catalogs made for each rule, so that each
 * test shows the rule and nothing else decides it.
 */

const plain = { category: 'Other Things', tags: ['api'], description: 'A product for people.' };

function tool(slug: string, overrides: Partial<Tool>): Tool {
  const record = newTool({ ...plain, ...overrides, slug, name: overrides.name ?? slug });
  return stamped(record, '2025-06-30T12:00:00.000Z');
}

function search(
  tools: Tool[],
  text: string,
  options: { category?: string; synonyms?: Synonyms } = {},
) {
  const snapshot = CatalogSnapshot.build(tools, 1, options.synonyms ?? new Synonyms([]));
  return snapshot.search({ text, limit: 10, category: options.category });
}

const slugs = (page: { items: { slug: string }[] }) => page.items.map((t) => t.slug);

describe('typos (docs/api.md#search)', () => {
  const tools = [
    tool('pinecone', { name: 'Pinecone' }),
    tool('langchain', { name: 'LangChain' }),
    tool('lang', { name: 'Lang' }),
  ];

  test.each([
    ['pinceone', 'pinecone', 'a swap, 8 letters'],
    ['pincone', 'pinecone', 'a letter missing, 7 letters'],
    ['pinecoone', 'pinecone', 'a letter too many, 9 letters'],
    ['langchian', 'langchain', 'a swap, 9 letters'],
    ['lnagchian', 'langchain', 'two swaps, 9 letters'],
    ['lnagchain', 'langchain', 'a swap at the start'],
  ])('"%s" finds %s (%s)', (q, slug) => {
    expect(slugs(search(tools, q))).toContain(slug);
  });

  test.each([
    ['pniceone', 'two edits in 8 letters'],
    ['lnag', 'a swap in 4 letters: short words match exactly or as a prefix'],
    ['lagn', 'another swap in 4 letters'],
  ])('"%s" finds nothing (%s)', (q) => {
    expect(search(tools, q).total).toBe(0);
  });

  test('exact and prefix matches outrank typo matches, whatever the field', () => {
    const catalog = [
      tool('typo-in-name', { name: 'Track Hub' }),
      tool('prefix-in-description', { description: 'Collects every trace of a run.' }),
      tool('prefix-in-name', { name: 'Tracer' }),
    ];
    expect(slugs(search(catalog, 'trace'))).toEqual([
      'prefix-in-name',
      'prefix-in-description',
      'typo-in-name',
    ]);
  });

  test('a misspelt word counts like a found one: more words found still ranks first', () => {
    const catalog = [
      tool('agents-only', { name: 'Agents Kit' }),
      tool('both', { name: 'LangChain', tags: ['agents'] }),
    ];
    expect(slugs(search(catalog, 'langchian agents'))[0]).toBe('both');
  });
});

describe('spacing (docs/api.md#search)', () => {
  const tools = [
    tool('openai', { name: 'OpenAI' }),
    tool('hugging-face', { name: 'Hugging Face Hub' }),
    tool('open-source-thing', { name: 'Open Thing', tags: ['open-source'] }),
  ];

  test('a name written together is found written apart, first', () => {
    expect(slugs(search(tools, 'open ai'))[0]).toBe('openai');
  });

  test('a name written apart is found written together, or its start', () => {
    expect(slugs(search(tools, 'huggingface'))).toEqual(['hugging-face']);
    expect(slugs(search(tools, 'huggingfacehub'))).toEqual(['hugging-face']);
  });

  test('the whole name, however spaced, is an exact name: first', () => {
    const catalog = [...tools, tool('open-ai-news', { name: 'Open AI News' })];
    expect(slugs(search(catalog, 'OpenAI News'))[0]).toBe('open-ai-news');
  });
});

describe('synonyms (docs/api.md#search)', () => {
  const synonyms = new Synonyms([
    ['tts', 'text to speech'],
    ['llm', 'large language model'],
  ]);
  const tools = [
    tool('tts-tag', { name: 'Voicer', tags: ['text-to-speech'] }),
    tool('stt-tag', { name: 'Listener', tags: ['speech-to-text'] }),
    tool('tts-description', { name: 'Reader', description: 'Reads text to speech for you.' }),
    tool('llm-tag', { name: 'Modeller', tags: ['llm'] }),
  ];

  test('a phrase finds the tools holding its synonym, in order: a tag above a description', () => {
    expect(slugs(search(tools, 'tts', { synonyms }))).toEqual(['tts-tag', 'tts-description']);
  });

  test('the other way round, and word order counts', () => {
    const found = slugs(search(tools, 'large language model', { synonyms }));
    expect(found[0]).toBe('llm-tag');
    expect(slugs(search(tools, 'text to speech', { synonyms })).slice(0, 2)).toEqual([
      'tts-tag',
      'tts-description',
    ]);
  });

  test('without the synonyms file saying so, nothing', () => {
    expect(search(tools, 'tts').total).toBe(0);
  });
});

describe('category filter and facets (docs/api.md#search)', () => {
  const tools = [
    tool('a1', { name: 'Vector One', category: 'Vector Databases' }),
    tool('a2', { name: 'Vector Two', category: 'Vector Databases' }),
    tool('b1', { name: 'Vector Three', category: 'Agent Frameworks' }),
    tool('c1', { name: 'Vector Four', category: 'Code Assistants' }),
    tool('d1', { name: 'Other', category: 'Code Assistants' }),
  ];

  test('facets count every match by category, most first, ties by name', () => {
    const page = search(tools, 'vector');
    expect(page.total).toBe(4);
    expect(page.facets.category).toEqual([
      { name: 'Vector Databases', slug: 'vector-databases', count: 2 },
      { name: 'Agent Frameworks', slug: 'agent-frameworks', count: 1 },
      { name: 'Code Assistants', slug: 'code-assistants', count: 1 },
    ]);
  });

  test.each(['Vector Databases', 'vector-databases', 'VECTOR DATABASES', 'Vector-Databases'])(
    'category=%s narrows hits and total; facets stay as before the filter',
    (category) => {
      const page = search(tools, 'vector', { category });
      expect(slugs(page).sort()).toEqual(['a1', 'a2']);
      expect(page.total).toBe(2);
      expect(page.facets).toEqual(search(tools, 'vector').facets);
    },
  );

  test('an unknown category finds nothing, and still says where the matches are', () => {
    const page = search(tools, 'vector', { category: 'nothing-like-it' });
    expect(page).toMatchObject({ items: [], total: 0 });
    expect(page.facets.category).toHaveLength(3);
  });
});
