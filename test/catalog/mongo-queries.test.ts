import type { Tool } from '../../services/catalog/src/schemas/tool';
import type { ToolChange } from '../../services/catalog/src/store/catalog-store';
import {
  CATEGORY_PIPELINE,
  MARK_LIVE,
  NAME_COLLATION,
  OUTBOX_INDEXES,
  TOOL_INDEXES,
  TOOL_PROJECTION,
  VERSION_COUNTER,
  changesSinceFilter,
  escapeRegex,
  fromOutboxDocument,
  isDuplicateName,
  live,
  outboxDocuments,
  planUpsert,
  sameNameFilter,
  seedOperations,
  seededChanges,
  summarize,
  toDocument,
  toolFilter,
  toolSort,
  versionIncrement,
  writeOperations,
} from '../../services/catalog/src/store/mongo-queries';
import { transactionsUnsupported } from '../../services/shared/mongo';
import { dataset } from '../support/catalog';

const LIVE = { deleted: { $ne: true } };

describe('MongoDB query documents', () => {
  test('no filter lists every live tool', () => {
    expect(toolFilter({})).toEqual(LIVE);
  });

  test('category matches the slug or the whole name, any case, as literal text', () => {
    expect(toolFilter({ category: 'Speech & Audio' })).toEqual({
      ...LIVE,
      $or: [
        { categorySlug: 'speech & audio' },
        { category: { $regex: '^Speech & Audio$', $options: 'i' } },
      ],
    });
    expect(toolFilter({ category: 'a.b*' })).toEqual({
      ...LIVE,
      $or: [{ categorySlug: 'a.b*' }, { category: { $regex: '^a\\.b\\*$', $options: 'i' } }],
    });
  });

  test('every search word must occur in name, description or tags', () => {
    const contains = (w: string) => ({ $regex: w, $options: 'i' });
    expect(toolFilter({ search: 'Open  SOURCE' })).toEqual({
      ...LIVE,
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

  test('categories of live tools are grouped by the server', () => {
    expect(CATEGORY_PIPELINE.slice(0, 2)).toEqual([
      { $match: LIVE },
      { $group: { _id: '$category', toolCount: { $sum: 1 } } },
    ]);
  });
});

const [toolA, toolB, toolC] = dataset.tools as [Tool, Tool, Tool];

describe('MongoDB write documents', () => {
  test('live() excludes tombstones; the seed marks tools stored before tombstones existed as live', () => {
    expect(live({ slug: 'x' })).toEqual({ slug: 'x', deleted: { $ne: true } });
    expect(MARK_LIVE).toEqual({
      filter: { deleted: { $exists: false } },
      update: { $set: { deleted: false } },
    });
  });

  test('a live tool is stored with its category slug and deleted: false, both hidden', () => {
    const doc = toDocument(toolA);
    expect(doc).toMatchObject({ ...toolA, deleted: false });
    expect(doc.categorySlug).toMatch(/^[a-z0-9-]+$/);
    expect(TOOL_PROJECTION).toEqual({ _id: 0, categorySlug: 0, deleted: 0 });
  });

  test('name is unique among live tools in any case', () => {
    const index = TOOL_INDEXES.find((i) => i.name === 'name_unique')!;
    expect(index).toEqual({
      key: { name: 1 },
      name: 'name_unique',
      unique: true,
      collation: { locale: 'en', strength: 2 },
      partialFilterExpression: { deleted: false },
    });
    expect(index.collation).toEqual(NAME_COLLATION);
  });

  test('the outbox version is unique', () => {
    expect(OUTBOX_INDEXES).toEqual([{ key: { version: 1 }, name: 'version_unique', unique: true }]);
  });

  test('the seed inserts a tool only where no document, live or tombstone, holds its slug', () => {
    expect(seedOperations([toolA])).toEqual([
      {
        updateOne: {
          filter: { slug: toolA.slug },
          update: { $setOnInsert: toDocument(toolA) },
          upsert: true,
        },
      },
    ]);
  });

  test('the seed reports as created exactly the tools whose operation inserted', () => {
    const changes = seededChanges([toolA, toolB, toolC], { 2: 'id-c', 0: 'id-a' });
    expect(changes).toEqual([
      { type: 'tool.created', slug: toolA.slug, tool: toolA },
      { type: 'tool.created', slug: toolC.slug, tool: toolC },
    ]);
    expect(seededChanges([toolA], {})).toEqual([]);
  });

  test('an upsert creates unknown or deleted slugs, updates changed tools, reports the rest', () => {
    const renamed = { ...toolB, name: `${toolB.name} 2`, rating: 1 };
    const plan = planUpsert(
      new Map([
        [toolA.slug, toolA],
        [toolB.slug, toolB],
      ]),
      [toolA, renamed, toolC],
    );
    expect(plan.unchanged).toEqual([toolA.slug]);
    expect(plan.changes).toEqual([
      { type: 'tool.updated', slug: toolB.slug, tool: renamed, changedFields: ['name', 'rating'] },
      { type: 'tool.created', slug: toolC.slug, tool: toolC },
    ]);
  });

  test('a slug given twice in one upsert is diffed against its first version', () => {
    const edited = { ...toolA, rating: 2 };
    const plan = planUpsert(new Map(), [toolA, edited, edited]);
    expect(plan.changes).toEqual([
      { type: 'tool.created', slug: toolA.slug, tool: toolA },
      { type: 'tool.updated', slug: toolA.slug, tool: edited, changedFields: ['rating'] },
    ]);
    expect(plan.unchanged).toEqual([toolA.slug]);
  });

  test('writes replace a tool (or its tombstone) by slug; a delete leaves a tombstone', () => {
    const ops = writeOperations([
      { type: 'tool.created', slug: toolA.slug, tool: toolA },
      { type: 'tool.deleted', slug: toolB.slug, name: toolB.name },
    ]);
    expect(ops).toEqual([
      {
        replaceOne: { filter: { slug: toolA.slug }, replacement: toDocument(toolA), upsert: true },
      },
      {
        replaceOne: {
          filter: { slug: toolB.slug },
          replacement: { slug: toolB.slug, name: toolB.name, deleted: true },
          upsert: true,
        },
      },
    ]);
  });

  test('versions are handed out by one $inc and numbered consecutively up to the counter', () => {
    expect(VERSION_COUNTER).toEqual({ _id: 'catalog_version' });
    expect(versionIncrement(3)).toEqual({ $inc: { value: 3 } });
    const changes: ToolChange[] = [
      { type: 'tool.created', slug: toolA.slug, tool: toolA },
      { type: 'tool.updated', slug: toolB.slug, tool: toolB, changedFields: ['rating'] },
      { type: 'tool.deleted', slug: toolC.slug, name: toolC.name },
    ];
    const at = '2026-01-02T03:04:05.000Z';
    const docs = outboxDocuments(changes, 12, at);
    expect(docs).toEqual([
      { version: 10, at, type: 'tool.created', slug: toolA.slug, payload: { tool: toolA } },
      {
        version: 11,
        at,
        type: 'tool.updated',
        slug: toolB.slug,
        payload: { tool: toolB, changedFields: ['rating'] },
      },
      { version: 12, at, type: 'tool.deleted', slug: toolC.slug, payload: { name: toolC.name } },
    ]);
    expect(docs.map(fromOutboxDocument)).toEqual(
      changes.map((change, i) => ({ ...change, version: 10 + i, at })),
    );
    expect(changesSinceFilter(11)).toEqual({ version: { $gt: 11 } });
  });

  test('the summary lists each change by kind, with the version after the write', () => {
    const summary = summarize(
      [
        { type: 'tool.created', slug: 'a', tool: toolA },
        { type: 'tool.updated', slug: 'b', tool: toolB, changedFields: ['name'] },
        { type: 'tool.deleted', slug: 'c', name: 'C' },
      ],
      ['d'],
      7,
    );
    expect(summary).toEqual({
      created: ['a'],
      updated: [{ slug: 'b', changedFields: ['name'] }],
      unchanged: ['d'],
      deleted: ['c'],
      version: 7,
    });
  });

  test('a refused name is traced to the live tools holding the written names', () => {
    expect(sameNameFilter([toolA, toolB])).toEqual({
      ...LIVE,
      name: { $in: [toolA.name, toolB.name] },
    });
  });

  test('only a duplicate key on name_unique counts as a duplicate name', () => {
    const duplicate = (message: string, code = 11000) =>
      Object.assign(new Error(message), { code });
    expect(
      isDuplicateName(
        duplicate(
          'E11000 duplicate key error collection: td.tools index: name_unique dup key: { name: "x" }',
        ),
      ),
    ).toBe(true);
    expect(
      isDuplicateName(
        duplicate('E11000 duplicate key error collection: td.tools index: slug_unique'),
      ),
    ).toBe(false);
    expect(isDuplicateName(duplicate('index: name_unique', 112))).toBe(false);
    expect(isDuplicateName({ code: 11000, message: 'index: name_unique' })).toBe(false);
  });
});

describe('the transaction check on `hello` replies', () => {
  test('a replica set primary and a mongos can run transactions', () => {
    expect(
      transactionsUnsupported({
        isWritablePrimary: true,
        setName: 'rs0',
        hosts: ['a:27017'],
        ok: 1,
      }),
    ).toBeUndefined();
    expect(
      transactionsUnsupported({ isWritablePrimary: true, msg: 'isdbgrid', ok: 1 }),
    ).toBeUndefined();
  });

  test('a standalone server is refused, naming the replica set requirement', () => {
    const problem = transactionsUnsupported({ isWritablePrimary: true, maxWireVersion: 21, ok: 1 });
    expect(problem).toMatch(/standalone/);
    expect(problem).toMatch(/must be a replica set/);
  });

  test('a secondary reached directly is refused', () => {
    expect(
      transactionsUnsupported({ isWritablePrimary: false, secondary: true, setName: 'rs0', ok: 1 }),
    ).toMatch(/rs0.*not its primary/);
  });
});
