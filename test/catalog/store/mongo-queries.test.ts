import { FullTool, type Tool, type ToolRecord } from '../../../services/catalog/src/schemas/tool';
import type { ToolChange } from '../../../services/catalog/src/store/catalog-store';
import { stamped } from '../../../services/catalog/src/store/change-clock';
import {
  CATEGORY_PIPELINE,
  MARK_LIVE,
  NAME_COLLATION,
  OUTBOX_INDEXES,
  TOOL_INDEXES,
  TOOL_PROJECTION,
  UNSTAMPED,
  UNSTAMPED_INSTANT,
  VERSION_COUNTER,
  changesSinceFilter,
  claimUpdate,
  claimedInstants,
  escapeRegex,
  fromOutboxDocument,
  isDuplicateName,
  knownSlugsFilter,
  live,
  outboxDocuments,
  planSeed,
  planUpsert,
  sameNameFilter,
  seedOperations,
  stampOperations,
  summarize,
  toDocument,
  toolFilter,
  toolSort,
  writeOperations,
} from '../../../services/catalog/src/store/mongo-queries';
import { UNVERIFIED_AT } from '../../../services/catalog/src/records/provenance';
import { transactionsUnsupported } from '../../../services/shared/mongo';
import { dataset, withoutProvenance } from '../../support/catalog';

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

  test('updatedSince keeps tools changed after the instant, not at it, with the other filters', () => {
    const since = '2025-06-30T12:00:00.000Z';
    expect(toolFilter({ updatedSince: since })).toEqual({ ...LIVE, updatedAt: { $gt: since } });
    const filter = toolFilter({ category: 'x', search: 'y', updatedSince: since }) as {
      $and: unknown[];
    };
    expect(filter.$and).toHaveLength(3);
    expect(filter.$and).toContainEqual({ updatedAt: { $gt: since } });
  });

  test('verifiedBefore keeps tools verified before the instant, not at it, with the other filters', () => {
    const before = '2025-06-30T00:00:00.000Z';
    // A tool stored before provenance existed has none, and is served as verified at the epoch.
    const verified = { $or: [{ verifiedAt: { $lt: before } }, { verifiedAt: null }] };
    expect(toolFilter({ verifiedBefore: before })).toEqual({ ...LIVE, ...verified });
    const filter = toolFilter({
      category: 'x',
      updatedSince: '2026-01-01T00:00:00.000Z',
      verifiedBefore: before,
    }) as { $and: unknown[] };
    expect(filter.$and).toEqual([
      { updatedAt: { $gt: '2026-01-01T00:00:00.000Z' } },
      verified,
      expect.objectContaining({ $or: expect.any(Array) as unknown }),
    ]);
    // Not even those are verified before the epoch.
    expect(toolFilter({ verifiedBefore: UNVERIFIED_AT })).toEqual({
      ...LIVE,
      verifiedAt: { $lt: UNVERIFIED_AT },
    });
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
    expect(toolSort('updatedAt')).toEqual({ updatedAt: 1, slug: 1 });
    expect(toolSort('-updatedAt')).toEqual({ updatedAt: -1, slug: -1 });
  });

  test('updatedSince and sort=updatedAt have an index, under the collation /tools queries use', () => {
    expect(TOOL_INDEXES).toContainEqual({
      key: { updatedAt: 1, slug: 1 },
      name: 'updated_slug',
      collation: NAME_COLLATION,
    });
  });

  test('verifiedBefore has an index, under the collation /tools queries use', () => {
    expect(TOOL_INDEXES).toContainEqual({
      key: { verifiedAt: 1, slug: 1 },
      name: 'verified_slug',
      collation: NAME_COLLATION,
    });
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

const [recordA, recordB, recordC] = dataset.tools as [ToolRecord, ToolRecord, ToolRecord];
const [toolA, toolB, toolC] = [recordA, recordB, recordC].map((record, i) =>
  stamped(record, `2026-01-02T03:04:05.00${i}Z`),
) as [Tool, Tool, Tool];

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
    const { _id, updatedAt, source, verifiedAt, ...fields } = TOOL_PROJECTION;
    expect(_id).toBe(0);
    // Exactly the record's fields, so categorySlug and deleted stay inside.
    expect(Object.keys({ ...fields, updatedAt, source, verifiedAt }).sort()).toEqual(
      Object.keys(FullTool.properties).sort(),
    );
    expect(Object.values(fields)).toEqual(Object.values(fields).map(() => 1));
  });

  test('a tool stored before updatedAt existed is served at the earliest instant until stamped', () => {
    expect(TOOL_PROJECTION.updatedAt).toEqual({ $ifNull: ['$updatedAt', UNSTAMPED_INSTANT] });
    expect(UNSTAMPED_INSTANT).toBe('1970-01-01T00:00:00.000Z');
    expect(UNSTAMPED).toEqual({ ...LIVE, updatedAt: { $exists: false } });
    expect(
      stampOperations(['a', 'b'], ['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.001Z']),
    ).toEqual([
      {
        updateOne: {
          filter: { slug: 'a', updatedAt: { $exists: false } },
          update: { $set: { updatedAt: '2026-01-01T00:00:00.000Z' } },
        },
      },
      {
        updateOne: {
          filter: { slug: 'b', updatedAt: { $exists: false } },
          update: { $set: { updatedAt: '2026-01-01T00:00:00.001Z' } },
        },
      },
    ]);
  });

  test('a tool stored before provenance existed is served with its website, verified at the epoch', () => {
    expect(TOOL_PROJECTION.source).toEqual({ $ifNull: ['$source', '$website'] });
    expect(TOOL_PROJECTION.verifiedAt).toEqual({ $ifNull: ['$verifiedAt', UNVERIFIED_AT] });
    expect(UNVERIFIED_AT).toBe('1970-01-01T00:00:00.000Z');
    // So is the tool of an outbox entry written then.
    const older = withoutProvenance(toolA);
    const [entry] = outboxDocuments(
      [{ type: 'tool.created', slug: toolA.slug, tool: older as Tool }],
      1,
      toolA.updatedAt,
    ).map(fromOutboxDocument);
    expect(entry).toMatchObject({
      tool: { ...older, source: toolA.website, verifiedAt: UNVERIFIED_AT },
    });
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

  test('the outbox version is unique; retention reads it by time', () => {
    expect(OUTBOX_INDEXES).toEqual([
      { key: { version: 1 }, name: 'version_unique', unique: true },
      { key: { at: 1 }, name: 'at' },
    ]);
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

  test('the seed plans to create exactly the bundled tools whose slug no document holds', () => {
    expect(knownSlugsFilter([recordA, recordB])).toEqual({
      slug: { $in: [recordA.slug, recordB.slug] },
    });
    const plan = planSeed([recordA, recordB, recordC], new Set([recordB.slug]));
    expect(plan).toEqual({
      changes: [
        { type: 'tool.created', slug: recordA.slug, tool: recordA },
        { type: 'tool.created', slug: recordC.slug, tool: recordC },
      ],
      unchanged: [],
    });
    expect(planSeed([recordA], new Set([recordA.slug])).changes).toEqual([]);
  });

  test('an upsert creates unknown or deleted slugs, updates changed tools, reports the rest', () => {
    const renamed = { ...recordB, name: `${recordB.name} 2`, rating: 1 };
    const plan = planUpsert(
      new Map([
        [toolA.slug, toolA],
        [toolB.slug, toolB],
      ]),
      [recordA, renamed, recordC],
    );
    expect(plan.unchanged).toEqual([toolA.slug]);
    expect(plan.changes).toEqual([
      { type: 'tool.updated', slug: toolB.slug, tool: renamed, changedFields: ['name', 'rating'] },
      { type: 'tool.created', slug: toolC.slug, tool: recordC },
    ]);
  });

  test("a record's own updatedAt is no change: an export re-imported is unchanged", () => {
    const exported = { ...toolA, updatedAt: '1999-01-01T00:00:00.000Z' };
    const plan = planUpsert(new Map([[toolA.slug, toolA]]), [exported]);
    expect(plan).toEqual({ changes: [], unchanged: [toolA.slug] });
    const edited = { ...exported, rating: 2 };
    expect(planUpsert(new Map([[toolA.slug, toolA]]), [edited]).changes).toEqual([
      { type: 'tool.updated', slug: toolA.slug, tool: edited, changedFields: ['rating'] },
    ]);
  });

  test('a record without provenance keeps the stored one, or gets the write time and its website', () => {
    const at = '2026-02-03T04:05:06.789Z';
    const bare = withoutProvenance(recordA);
    // Unchanged but for the missing provenance: the stored one is kept, nothing changes.
    expect(planUpsert(new Map([[toolA.slug, toolA]]), [bare], at)).toEqual({
      changes: [],
      unchanged: [toolA.slug],
    });
    // A new slug: checked at the time of the write, at its website.
    const created = { ...bare, slug: 'new-tool', name: 'New Tool' };
    expect(planUpsert(new Map(), [created], at).changes).toEqual([
      {
        type: 'tool.created',
        slug: 'new-tool',
        tool: { ...created, source: recordA.website, verifiedAt: at },
      },
    ]);
    // What the record says wins, its verifiedAt stored canonical; a change like any other.
    const checked = {
      ...bare,
      source: 'https://example.com/pricing',
      verifiedAt: '2026-01-01T01:00:00+01:00',
    };
    expect(planUpsert(new Map([[toolA.slug, toolA]]), [checked], at).changes).toEqual([
      {
        type: 'tool.updated',
        slug: toolA.slug,
        tool: { ...checked, verifiedAt: '2026-01-01T00:00:00.000Z' },
        changedFields: ['source', 'verifiedAt'],
      },
    ]);
    // A slug twice: the second keeps what the first gave it.
    const twice = planUpsert(new Map(), [created, { ...created, rating: 1 }], at);
    expect(twice.changes[1]).toMatchObject({
      tool: { source: recordA.website, verifiedAt: at, rating: 1 },
      changedFields: ['rating'],
    });
  });

  test('a slug given twice in one upsert is diffed against its first version', () => {
    const edited = { ...recordA, rating: 2 };
    const plan = planUpsert(new Map(), [recordA, edited, edited]);
    expect(plan.changes).toEqual([
      { type: 'tool.created', slug: toolA.slug, tool: recordA },
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

  test('versions and instants are claimed in one server-side step on the counter', () => {
    expect(VERSION_COUNTER).toEqual({ _id: 'catalog_version' });
    expect(claimUpdate(3, 3)).toEqual([
      {
        $set: {
          value: { $add: [{ $ifNull: ['$value', 0] }, 3] },
          // The last instant: the server's time plus the two before it, or three past the last.
          clock: {
            $max: [{ $add: ['$$NOW', 2] }, { $add: [{ $ifNull: ['$clock', new Date(0)] }, 3] }],
          },
        },
      },
    ]);
    // A stamping claims one version for many instants.
    expect(claimUpdate(1, 5)[0]!.$set.value).toEqual({ $add: [{ $ifNull: ['$value', 0] }, 1] });
  });

  test('the claimed instants end at the counter clock, a millisecond apart, oldest first', () => {
    const clock = new Date('2026-01-02T03:04:05.002Z');
    expect(claimedInstants({ _id: 'catalog_version', value: 12, clock }, 3)).toEqual([
      '2026-01-02T03:04:05.000Z',
      '2026-01-02T03:04:05.001Z',
      '2026-01-02T03:04:05.002Z',
    ]);
    expect(claimedInstants({ _id: 'catalog_version', value: 1, clock }, 1)).toEqual([
      '2026-01-02T03:04:05.002Z',
    ]);
  });

  test('outbox entries are numbered consecutively up to the counter, at the write’s time', () => {
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
