import {
  type EmbeddedDatabase,
  openEmbeddedDatabase,
} from '../../../shared/embedded/embedded-database';
import type { RedisClient } from '../../../shared/redis';

/**
 * The last catalog version whose outbox entries were turned into webhook events. Durable, so a
 * restart resumes where dispatching stopped; only ever moves forward, so two catalog replicas
 * advancing it at once cannot move it back.
 */
export interface DispatchCursor {
  /** Null before the first dispatch ever. */
  get(): Promise<number | null>;
  /** Moves the cursor to `to` unless it is there or further already. */
  advance(to: number): Promise<void>;
  close(): Promise<void>;
}

export const DISPATCH_CURSOR_FILE = 'webhooks-cursor.db';

const MIGRATIONS = [
  (db: EmbeddedDatabase) =>
    db.exec('CREATE TABLE cursor (name TEXT PRIMARY KEY, version INTEGER NOT NULL)'),
];

/** The embedded mode's cursor: a row in `DATA_DIR/webhooks-cursor.db`. */
export class EmbeddedDispatchCursor implements DispatchCursor {
  private readonly db: EmbeddedDatabase;
  private readonly read;
  private readonly write;

  constructor(dataDir: string) {
    this.db = openEmbeddedDatabase(dataDir, DISPATCH_CURSOR_FILE, MIGRATIONS);
    this.read = this.db
      .prepare<[], number>("SELECT version FROM cursor WHERE name = 'outbox'")
      .pluck();
    this.write = this.db.prepare<[number]>(
      `INSERT INTO cursor (name, version) VALUES ('outbox', ?)
       ON CONFLICT (name) DO UPDATE SET version = max(version, excluded.version)`,
    );
  }

  async get(): Promise<number | null> {
    return (this.read.get() as number | undefined) ?? null;
  }

  async advance(to: number): Promise<void> {
    this.write.run(to);
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

export const REDIS_CURSOR_KEY = 'tool-directory:webhooks:dispatch-cursor';

/** Compare and set in one step: a slower replica's older version never overwrites a newer one. */
const ADVANCE_SCRIPT = `
local current = tonumber(redis.call('GET', KEYS[1]))
if current == nil or current < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
end
return 0`;

/**
 * The cursor of a deployment with Redis, shared by every catalog replica. It has no TTL: Redis
 * must keep it (`appendonly yes`, `maxmemory-policy noeviction`, as the queue needs anyway).
 * One key, read and set by a script of that one key, so it works on a cluster as on one server.
 * The connection stays the caller's.
 */
export class RedisDispatchCursor implements DispatchCursor {
  constructor(
    private readonly redis: RedisClient,
    private readonly key = REDIS_CURSOR_KEY,
  ) {}

  async get(): Promise<number | null> {
    const value = await this.redis.get(this.key);
    return value === null ? null : Number(value);
  }

  async advance(to: number): Promise<void> {
    await this.redis.eval(ADVANCE_SCRIPT, 1, this.key, String(to));
  }

  async close(): Promise<void> {}
}
