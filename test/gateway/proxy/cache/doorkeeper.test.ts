import { Doorkeeper } from '../../../../services/gateway/src/proxy/cache/doorkeeper';

describe('the response cache doorkeeper (keys asked before)', () => {
  test('a key is new the first time, seen from the second time on', () => {
    const seen = new Doorkeeper(1024);
    expect(seen.seenBefore('free  /v1/tools?limit=20')).toBe(false);
    expect(seen.seenBefore('free  /v1/tools?limit=20')).toBe(true);
    expect(seen.seenBefore('free  /v1/tools?limit=20')).toBe(true);
  });

  test('keys that differ by a character, tier or encoding are told apart', () => {
    const seen = new Doorkeeper(16_384);
    const keys = Array.from({ length: 1_000 }, (_, i) => `free  /v1/tools?limit=20&page=${i}`);
    keys.push('pro  /v1/tools?limit=20&page=1', 'free gzip /v1/tools?limit=20&page=1');
    expect(keys.filter((key) => seen.seenBefore(key))).toEqual([]);
    // Asked again: each slot keeps the last key hashed to it, so a few were pushed out by
    // another key of their slot (a third request admits them), far from all.
    const again = keys.filter((key) => seen.seenBefore(key)).length;
    expect(again).toBeGreaterThan(keys.length * 0.9);
  });

  test('a key is forgotten once enough others have come after it, as an LRU would', () => {
    const seen = new Doorkeeper(1024);
    seen.seenBefore('asked once');
    for (let i = 0; i < 100_000; i++) seen.seenBefore(`crawl ${i}`);
    expect(seen.seenBefore('asked once')).toBe(false);
  });

  test('clear forgets every key', () => {
    const seen = new Doorkeeper(1024);
    seen.seenBefore('a');
    seen.clear();
    expect(seen.seenBefore('a')).toBe(false);
  });
});
