import { type EmbeddedDatabase, openEmbeddedDatabase } from '../embedded/embedded-database';
import {
  type ChangeFeed,
  type ChangeListener,
  type ChangeTopic,
  ListenerRegistry,
} from './change-feed';

export const CHANGE_FEED_FILE = 'change-feed.db';

/**
 * Well under the one second of docs/api.md#api-keys-and-registration,
 * docs/api.md#catalog-changes-and-freshness, and an indexed read of nothing costs microseconds.
 */
const POLL_INTERVAL_MS = 100;
/** Messages are kept this long: a process that polls less often than this has missed some. */
const RETENTION_MS = 60_000;

const MIGRATIONS = [
  (db: EmbeddedDatabase) =>
    db.exec(`CREATE TABLE feed (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      topic TEXT NOT NULL,
      message TEXT NOT NULL,
      at INTEGER NOT NULL
    );
    CREATE INDEX feed_at ON feed (at)`),
];

interface FeedRow {
  seq: number;
  topic: ChangeTopic;
  message: string;
}

/**
 * The change feed of the embedded single-machine mode, where the CLIs, the catalog and the
 * gateway are separate processes sharing DATA_DIR: a publish appends a row to an SQLite file,
 * and every subscribed process reads the rows after the last one it saw, every 100 ms.
 */
export class LocalChangeFeed implements ChangeFeed {
  readonly kind = 'local';
  private readonly db: EmbeddedDatabase;
  private readonly listeners = new ListenerRegistry();
  private readonly insert;
  private readonly prune;
  private readonly after;
  private lastSeq: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(dataDir: string) {
    this.db = openEmbeddedDatabase(dataDir, CHANGE_FEED_FILE, MIGRATIONS);
    this.insert = this.db.prepare('INSERT INTO feed (topic, message, at) VALUES (?, ?, ?)');
    this.prune = this.db.prepare('DELETE FROM feed WHERE at < ?');
    this.after = this.db.prepare<[number], FeedRow>(
      'SELECT seq, topic, message FROM feed WHERE seq > ? ORDER BY seq',
    );
    // Where the sequence stands, even when every row has been pruned.
    this.lastSeq =
      this.db
        .prepare<[], { seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'feed'")
        .get()?.seq ?? 0;
  }

  async publish(topic: ChangeTopic, message: string): Promise<void> {
    const now = Date.now();
    this.insert.run(topic, message, now);
    this.prune.run(now - RETENTION_MS);
  }

  async subscribe(topic: ChangeTopic, listener: ChangeListener): Promise<() => void> {
    const stop = this.listeners.add(topic, listener);
    this.timer ??= setInterval(() => this.poll(), POLL_INTERVAL_MS).unref();
    return stop;
  }

  private poll(): void {
    const rows = this.after.all(this.lastSeq);
    if (rows.length === 0) return;
    // Rows we never saw were pruned: something was missed.
    if (rows[0]!.seq > this.lastSeq + 1) this.listeners.emitAll(null);
    for (const row of rows) this.listeners.emit(row.topic, row.message);
    this.lastSeq = rows[rows.length - 1]!.seq;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.db.close();
  }
}
