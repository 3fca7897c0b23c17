/** Keys remembered per replica per day: about 10 MB at most. */
const MAX_KEYS = 100_000;

/**
 * How many requests this replica itself admitted per key on the current UTC day. It is the
 * quota while Redis cannot answer, and a floor under Redis's count when Redis has lost its
 * counters (a restart without persistence, an eviction), so no replica ever admits a key more
 * than its quota in a day. Past `maxKeys` keys in a day, the key seen first is forgotten.
 */
export class AdmittedToday {
  private readonly counts = new Map<string, number>();
  private date = '';

  constructor(private readonly maxKeys = MAX_KEYS) {}

  /** A key's count on `date`; a later date drops the previous day's counts. */
  of(keyId: string, date: string): number {
    if (date !== this.date) {
      // A request of a day that has ended (it started before midnight) counts nothing today.
      if (date < this.date) return 0;
      this.counts.clear();
      this.date = date;
    }
    return this.counts.get(keyId) ?? 0;
  }

  set(keyId: string, date: string, count: number): void {
    if (date !== this.date) return;
    if (this.counts.size >= this.maxKeys && !this.counts.has(keyId)) {
      this.counts.delete(this.counts.keys().next().value!);
    }
    this.counts.set(keyId, count);
  }
}
