/** Keys remembered per replica per day: about 10 MB at most. */
const MAX_KEYS = 100_000;

/**
 * How many requests this replica itself admitted per key on the current UTC day. It is the
 * quota while Redis cannot answer, and a floor under Redis's count when Redis has lost its
 * counters (a restart without persistence, an eviction), so no replica ever admits a key more
 * than its quota in a day. Past `maxKeys` keys in a day, the key seen first is forgotten.
 *
 * Without Redis it is also the usage history (`GET /v1/usage`): the counts of the days before are
 * kept for `retainDays` days, each day bounded like today.
 */
export class AdmittedToday {
  private counts = new Map<string, number>();
  private date = '';
  /** Earlier days' counts, newest first, when days are retained. */
  private readonly earlier: { date: string; counts: Map<string, number> }[] = [];

  constructor(
    private readonly maxKeys = MAX_KEYS,
    private readonly retainDays = 1,
  ) {}

  /** A key's count on `date`; a later date starts a new day. */
  of(keyId: string, date: string): number {
    if (date !== this.date) {
      // A request of a day that has ended (it started before midnight) counts nothing today.
      if (date < this.date) return 0;
      this.startDay(date);
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

  /** A key's count on each of `dates` (UTC, `YYYY-MM-DD`), 0 where none is kept. */
  history(keyId: string, dates: readonly string[]): number[] {
    return dates.map((date) =>
      date === this.date
        ? (this.counts.get(keyId) ?? 0)
        : (this.earlier.find((day) => day.date === date)?.counts.get(keyId) ?? 0),
    );
  }

  private startDay(date: string): void {
    if (this.retainDays > 1 && this.date !== '') {
      this.earlier.unshift({ date: this.date, counts: this.counts });
      this.earlier.length = Math.min(this.earlier.length, this.retainDays - 1);
    }
    this.counts = new Map();
    this.date = date;
  }
}
