import { AdmittedToday } from '../../../services/gateway/src/quota/admitted-today';

/** A replica's own count per key and UTC day: reset by a new day, bounded in keys. */
describe('AdmittedToday', () => {
  test('counts per key for the day; a new day starts from nothing', () => {
    const admitted = new AdmittedToday();
    expect(admitted.of('a', '2026-05-01')).toBe(0);
    admitted.set('a', '2026-05-01', 3);
    admitted.set('b', '2026-05-01', 1);
    expect(admitted.of('a', '2026-05-01')).toBe(3);
    expect(admitted.of('a', '2026-05-02')).toBe(0);
    expect(admitted.of('b', '2026-05-02')).toBe(0);
    admitted.set('a', '2026-05-02', 2);
    // A request of the day that has ended, finishing after midnight, changes nothing today.
    expect(admitted.of('a', '2026-05-01')).toBe(0);
    admitted.set('a', '2026-05-01', 4);
    expect(admitted.of('a', '2026-05-02')).toBe(2);
  });

  test('past its bound it forgets the key seen first, and only that one', () => {
    const admitted = new AdmittedToday(2);
    const day = '2026-05-01';
    admitted.of('a', day);
    admitted.set('a', day, 5);
    admitted.set('b', day, 6);
    admitted.set('b', day, 7);
    admitted.set('c', day, 1);
    expect([admitted.of('a', day), admitted.of('b', day), admitted.of('c', day)]).toEqual([
      0, 7, 1,
    ]);
  });
});
