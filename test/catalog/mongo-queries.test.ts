import {
  CATEGORY_PIPELINE,
  TOOL_INDEXES,
  escapeRegex,
  prefixFallbackFilter,
  prefixScore,
  textSearchFilter,
  toolFilter,
  toolSort,
  upsertOperations,
} from '../../services/catalog/src/store/mongo-queries';
import { dataset } from '../support/catalog';

describe('MongoDB query documents', () => {
  test('no filter lists everything', () => {
    expect(toolFilter({})).toEqual({});
  });

  test('category matches the slug or the whole name, any case, as literal text', () => {
    expect(toolFilter({ category: 'Speech & Audio' })).toEqual({
      $or: [
        { categorySlug: 'speech & audio' },
        { category: { $regex: '^Speech & Audio$', $options: 'i' } },
      ],
    });
    expect(toolFilter({ category: 'a.b*' })).toEqual({
      $or: [{ categorySlug: 'a.b*' }, { category: { $regex: '^a\\.b\\*$', $options: 'i' } }],
    });
  });

  test('every search word must occur in name, description or tags', () => {
    const contains = (w: string) => ({ $regex: w, $options: 'i' });
    expect(toolFilter({ search: 'Open  SOURCE' })).toEqual({
      $and: [
        {
          $or: [
            { name: contains('open') },
            { description: contains('open') },
            { tags: contains('open') },
          ],
        },
        {
          $or: [
            { name: contains('source') },
            { description: contains('source') },
            { tags: contains('source') },
          ],
        },
      ],
    });
  });

  test('category and search combine with $and', () => {
    const filter = toolFilter({ category: 'x', search: 'y' }) as { $and: unknown[] };
    expect(filter.$and).toHaveLength(2);
  });

  test('user text never becomes an operator or a live regex', () => {
    expect(escapeRegex('(a+)+$|.*[x]\\')).toBe('\\(a\\+\\)\\+\\$\\|\\.\\*\\[x\\]\\\\');
    const filter = toolFilter({ search: '{"$gt":""}' }) as { $or: { name: { $regex: string } }[] };
    expect(filter.$or[0]!.name.$regex).toBe('\\{"\\$gt":""\\}');
    expect(new RegExp(filter.$or[0]!.name.$regex).test('{"$gt":""}')).toBe(true);
  });

  test('sorts break every tie down to the unique slug', () => {
    expect(toolSort('name')).toEqual({ name: 1, slug: 1 });
    expect(toolSort('-name')).toEqual({ name: -1, slug: -1 });
    expect(toolSort('rating')).toEqual({ rating: 1, name: 1, slug: 1 });
    expect(toolSort('-rating')).toEqual({ rating: -1, name: 1, slug: 1 });
  });

  test('the text index is weighted name > tags > category > description and ignores `language`', () => {
    const text = TOOL_INDEXES.find((i) => i.name === 'tool_text')!;
    expect(text.key).toEqual({ name: 'text', tags: 'text', category: 'text', description: 'text' });
    const w = text.weights as Record<string, number>;
    expect(w.name! > w.tags! && w.tags! >= w.category! && w.category! > w.description!).toBe(true);
    expect(text.language_override).toBeDefined();
    expect(text.language_override).not.toBe('language');
    for (const tool of dataset.tools) expect(tool).not.toHaveProperty(text.language_override!);
  });

  test('slug is unique', () => {
    expect(TOOL_INDEXES).toContainEqual(
      expect.objectContaining({ key: { slug: 1 }, unique: true }),
    );
  });

  test('search uses $text, plus a word-prefix fallback over name, tags and category', () => {
    expect(textSearchFilter('vector db')).toEqual({ $text: { $search: 'vector db' } });
    const fallback = prefixFallbackFilter('Lang ai') as {
      $or: Record<string, { $regex: string }>[];
    };
    expect(fallback.$or).toHaveLength(6);
    expect(Object.keys(fallback.$or[0]!)).toEqual(['name']);
    const regex = new RegExp(fallback.$or[0]!.name!.$regex, 'i');
    expect(regex.test('LangChain')).toBe(true);
    expect(regex.test('Haystack by deepset')).toBe(false);
    expect(regex.test('Slang')).toBe(false);
  });

  test('fallback scores weigh the name above tags and category', () => {
    const tool = { ...dataset.tools[0]!, name: 'Langflow', tags: ['agents'], category: 'Other' };
    expect(prefixScore(tool, 'lang')).toBeGreaterThan(prefixScore(tool, 'agent'));
    expect(prefixScore(tool, 'zzz')).toBe(0);
  });

  test('categories are grouped by the server', () => {
    expect(CATEGORY_PIPELINE[0]).toEqual({ $group: { _id: '$category', toolCount: { $sum: 1 } } });
  });

  test('seeding upserts by slug with the derived category slug', () => {
    const [op] = upsertOperations([dataset.tools[0]!]);
    expect(op!.replaceOne.filter).toEqual({ slug: dataset.tools[0]!.slug });
    expect(op!.replaceOne.upsert).toBe(true);
    expect(op!.replaceOne.replacement.categorySlug).toMatch(/^[a-z0-9-]+$/);
  });
});
