import { EmbeddedKeyStore } from '../../../services/gateway/src/keys/embedded-key-store';
import {
  addOperations,
  gapsPipeline,
  keyReportPipeline,
} from '../../../services/gateway/src/analytics/mongo-search-analytics';
import {
  SearchRecorder,
  normalizeQuery,
  searchTotal,
} from '../../../services/gateway/src/analytics/search-recorder';
import { tempDataDir } from '../../support/services';

const silent = { warn: () => {} };
const DAY = Date.parse('2026-11-20T12:00:00.000Z');

describe('search analytics, counted', () => {
  test('queries compare after trimming, collapsing spaces and lower-casing', () => {
    expect(normalizeQuery('  Vector   DATABASE\t ')).toBe('vector database');
    expect(normalizeQuery('Cafe\u0301')).toBe(normalizeQuery('café'));
  });

  test("a search answer's hit count is read from its bytes, without parsing it", () => {
    const answer = (total: number) =>
      Buffer.from(
        JSON.stringify({
          data: [{ name: 'x', meta: { total: 99 } }],
          meta: { total, limit: 10, query: 'q' },
        }),
      );
    expect(searchTotal(answer(0))).toBe(0);
    expect(searchTotal(answer(1234))).toBe(1234);
    expect(searchTotal(Buffer.from('{"error":"no"}'))).toBeUndefined();
  });

  test('a batch is one write that sums into the rows of other replicas; a key reads its own', async () => {
    const dataDir = tempDataDir();
    const [a, b] = [new EmbeddedKeyStore(dataDir), new EmbeddedKeyStore(dataDir)];
    let now = DAY;
    const adds: number[] = [];
    const recorder = (store: EmbeddedKeyStore) =>
      new SearchRecorder({
        store: {
          ...store.searches,
          add: (tallies) => (adds.push(tallies.length), store.searches.add(tallies)),
          prune: (day) => store.searches.prune(day),
          ofKey: (k, d) => store.searches.ofKey(k, d),
          gaps: (d, l) => store.searches.gaps(d, l),
        },
        flushMs: 60_000,
        clock: () => now,
        logger: silent,
      });
    const [one, two] = [recorder(a), recorder(b)];
    for (let i = 0; i < 3; i++) one.record('key-1', 'Vector database', 5);
    one.record('key-1', 'quantum  knitting', 0);
    two.record('key-1', 'vector DATABASE', 2);
    two.record('key-1', 'Quantum knitting', 0);
    two.record('key-2', 'secret plans', 0);
    now += 1000;
    await one.flush();
    await two.flush();
    expect(adds).toEqual([2, 3]);

    const report = await a.searches.ofKey('key-1', '2026-11-01');
    expect(report.totals).toEqual({ searches: 6, noHits: 2 });
    expect(report.top).toEqual([
      { query: 'vector database', count: 4, lastAt: expect.any(String) },
      { query: 'quantum knitting', count: 2, lastAt: expect.any(String) },
    ]);
    expect(report.noHit).toEqual([
      { query: 'quantum knitting', count: 2, lastAt: new Date(DAY).toISOString() },
    ]);
    // Another key's queries are not in it; the operators' gaps count keys, not texts of keys.
    expect(JSON.stringify(report)).not.toContain('secret plans');
    expect(await b.searches.gaps('2026-11-01', 10)).toEqual([
      { query: 'quantum knitting', count: 2, keys: 1, lastAt: expect.any(String) },
      { query: 'secret plans', count: 1, keys: 1, lastAt: expect.any(String) },
    ]);

    // Thirty days on, the day is dropped at the next write.
    now = DAY + 31 * 86_400_000;
    one.record('key-1', 'later', 1);
    await one.flush();
    expect((await a.searches.ofKey('key-1', '2026-01-01')).totals).toEqual({
      searches: 1,
      noHits: 0,
    });
    await a.close();
    await b.close();
  });

  test('searches on both sides of midnight are each kept under their own day', async () => {
    const store = new EmbeddedKeyStore(tempDataDir());
    let now = Date.parse('2026-11-20T23:59:59.000Z');
    const recorder = new SearchRecorder({
      store: store.searches,
      flushMs: 60_000,
      clock: () => now,
      logger: silent,
    });
    recorder.record('key-1', 'midnight', 1);
    now += 2_000;
    recorder.record('key-1', 'midnight', 0);
    await recorder.flush();
    expect((await store.searches.ofKey('key-1', '2026-11-21')).totals).toEqual({
      searches: 1,
      noHits: 1,
    });
    expect((await store.searches.ofKey('key-1', '2026-11-20')).totals).toEqual({
      searches: 2,
      noHits: 1,
    });
    await store.close();
  });

  test('a million distinct queries keep at most one batch of tallies; the rest is counted as dropped', async () => {
    const written: number[] = [];
    let dropped = 0;
    const recorder = new SearchRecorder({
      store: {
        add: async (tallies) => void written.push(tallies.length),
        prune: async () => {},
        ofKey: async () => ({ top: [], noHit: [], totals: { searches: 0, noHits: 0 } }),
        gaps: async () => [],
      },
      flushMs: 60_000,
      maxPending: 10_000,
      clock: () => DAY,
      logger: silent,
      onDropped: (n) => (dropped += n),
    });
    for (let i = 0; i < 1_000_000; i++) recorder.record('key-1', `query ${i}`, i % 3);
    expect(recorder.size).toBe(10_000);
    await recorder.flush();
    expect(written).toEqual([10_000]);
    expect(dropped).toBe(990_000);
    expect(recorder.size).toBe(0);
  });
});

describe('search analytics on MongoDB: the documents', () => {
  test('a tally sums into its document, which expires with the retention', () => {
    const [op] = addOperations([
      {
        keyId: 'k',
        query: 'q',
        day: '2026-11-20',
        count: 3,
        noHits: 1,
        lastAt: '2026-11-20T10:00:00.000Z',
        lastNoHitAt: '2026-11-20T09:00:00.000Z',
      },
    ]);
    expect(op).toEqual({
      updateOne: {
        filter: { _id: { keyId: 'k', day: '2026-11-20', query: 'q' } },
        update: {
          $inc: { count: 3, noHits: 1 },
          $max: { lastAt: '2026-11-20T10:00:00.000Z', lastNoHitAt: '2026-11-20T09:00:00.000Z' },
          $setOnInsert: { expiresAt: new Date('2026-12-21T00:00:00.000Z') },
        },
        upsert: true,
      },
    });
  });

  test("a key's report reads only its own documents; the gaps every key's, counting keys", () => {
    expect(keyReportPipeline('k', '2026-11-01')[0]).toEqual({
      $match: { '_id.keyId': 'k', '_id.day': { $gte: '2026-11-01' } },
    });
    expect(gapsPipeline('2026-11-01', 5)[0]).toEqual({
      $match: { '_id.day': { $gte: '2026-11-01' }, noHits: { $gt: 0 } },
    });
    expect(gapsPipeline('2026-11-01', 5).at(-1)).toEqual({ $limit: 5 });
  });
});
