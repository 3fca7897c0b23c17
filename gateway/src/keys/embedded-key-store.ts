import { existsSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import {
  type EmbeddedDatabase,
  openEmbeddedDatabase,
} from '../../../services/shared/embedded/embedded-database';
import {
  EmailTakenError,
  type KeyChanges,
  KeyRevokedError,
  type KeyRecord,
  type KeyRoll,
  type KeyStore,
} from './key-store';

export const KEYS_DATABASE_FILE = 'keys.db';
/** The JSON file of earlier versions, imported once and then renamed. */
export const LEGACY_KEYS_FILE = 'api-keys.json';

const CHANGE_LOG_RETENTION_S = 3_600;

const MIGRATIONS = [
  (db: EmbeddedDatabase) =>
    db.exec(`CREATE TABLE api_keys (
      id TEXT PRIMARY KEY,
      digest TEXT NOT NULL UNIQUE,
      tier TEXT NOT NULL,
      email TEXT NOT NULL,
      name TEXT NOT NULL,
      use_case TEXT NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      revoked_at TEXT,
      -- lower(email) while the key is active, else NULL: at most one active key per email.
      active_email TEXT UNIQUE
    )`),
  // The log of key changes every gateway polls, written by triggers in the transaction of the
  // change itself, so no write path can forget it; rows older than an hour are pruned as new
  // ones come (a gateway that polled less often than that forgets every key it cached).
  (db: EmbeddedDatabase) =>
    db.exec(`CREATE TABLE key_changes (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      digest TEXT NOT NULL,
      at INTEGER NOT NULL
    );
    CREATE TRIGGER api_keys_inserted AFTER INSERT ON api_keys BEGIN
      DELETE FROM key_changes WHERE at < unixepoch() - ${CHANGE_LOG_RETENTION_S};
      INSERT INTO key_changes (digest, at) VALUES (NEW.digest, unixepoch());
    END;
    CREATE TRIGGER api_keys_updated AFTER UPDATE ON api_keys BEGIN
      DELETE FROM key_changes WHERE at < unixepoch() - ${CHANGE_LOG_RETENTION_S};
      INSERT INTO key_changes (digest, at) VALUES (NEW.digest, unixepoch());
    END`),
  // Key roll: a previous secret working until its grace ends; the change log names the key id,
  // so a change drops every cached secret of the key.
  (db: EmbeddedDatabase) =>
    db.exec(`ALTER TABLE api_keys ADD COLUMN previous_digest TEXT;
    ALTER TABLE api_keys ADD COLUMN previous_expires_at TEXT;
    CREATE UNIQUE INDEX api_keys_previous_digest ON api_keys (previous_digest);
    ALTER TABLE key_changes ADD COLUMN key_id TEXT;
    DROP TRIGGER api_keys_inserted;
    DROP TRIGGER api_keys_updated;
    CREATE TRIGGER api_keys_inserted AFTER INSERT ON api_keys BEGIN
      DELETE FROM key_changes WHERE at < unixepoch() - ${CHANGE_LOG_RETENTION_S};
      INSERT INTO key_changes (key_id, digest, at) VALUES (NEW.id, NEW.digest, unixepoch());
    END;
    CREATE TRIGGER api_keys_updated AFTER UPDATE ON api_keys BEGIN
      DELETE FROM key_changes WHERE at < unixepoch() - ${CHANGE_LOG_RETENTION_S};
      INSERT INTO key_changes (key_id, digest, at) VALUES (NEW.id, NEW.digest, unixepoch());
    END`),
];

interface KeyRow {
  id: string;
  digest: string;
  tier: KeyRecord['tier'];
  email: string;
  name: string;
  use_case: string;
  created_at: string;
  updated_at: string;
  revoked_at: string | null;
  previous_digest: string | null;
  previous_expires_at: string | null;
}

function toRecord(row: KeyRow): KeyRecord {
  return {
    id: row.id,
    digest: row.digest,
    tier: row.tier,
    email: row.email,
    name: row.name,
    useCase: row.use_case,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    revokedAt: row.revoked_at,
    previousDigest: row.previous_digest,
    previousExpiresAt: row.previous_expires_at,
  };
}

function isUniqueViolation(err: unknown, column: string): boolean {
  // Duck-typed: better-sqlite3's SqliteError may come from another realm (a test sandbox).
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  return (
    code === 'SQLITE_CONSTRAINT_UNIQUE' &&
    typeof message === 'string' &&
    message.includes(`api_keys.${column}`)
  );
}

/**
 * API keys in `DATA_DIR/keys.db` (SQLite), for the embedded setup. Each write is one
 * transaction, so the gateways and `npm run keys` sharing DATA_DIR never overwrite each other,
 * the database enforces one active key per email, and a crash loses no answered write. A write
 * costs the same at 100 keys as at 100,000.
 */
export class EmbeddedKeyStore implements KeyStore {
  readonly kind = 'embedded';
  private readonly db: EmbeddedDatabase;
  private readonly insertRow;
  private readonly byDigest;
  private readonly byIdOrDigest;
  private readonly all;
  private readonly updateRow;
  private readonly rollRow;
  private readonly changesAfter;
  private readonly lastChange;

  constructor(dataDir: string) {
    this.db = openEmbeddedDatabase(dataDir, KEYS_DATABASE_FILE, MIGRATIONS);
    this.insertRow = this.db.prepare(
      `INSERT INTO api_keys (id, digest, tier, email, name, use_case, created_at, updated_at,
         revoked_at, active_email, previous_digest, previous_expires_at)
       VALUES (@id, @digest, @tier, @email, @name, @useCase, @createdAt, @updatedAt, @revokedAt,
         @activeEmail, @previousDigest, @previousExpiresAt)`,
    );
    // The current secret, or the previous one while its grace lasts (ISO instants sort as text).
    this.byDigest = this.db.prepare<[{ digest: string; now: string }], KeyRow>(
      `SELECT * FROM api_keys WHERE digest = @digest
       UNION ALL
       SELECT * FROM api_keys WHERE previous_digest = @digest AND previous_expires_at > @now`,
    );
    this.byIdOrDigest = this.db.prepare<[string, string], KeyRow>(
      'SELECT * FROM api_keys WHERE id = ? OR digest = ?',
    );
    this.all = this.db.prepare<[], KeyRow>('SELECT * FROM api_keys ORDER BY created_at, id');
    const update = this.db.prepare<[Record<string, unknown>], KeyRow>(
      `UPDATE api_keys SET
         tier = coalesce(@tier, tier),
         revoked_at = coalesce(@revokedAt, revoked_at),
         active_email = CASE WHEN @revokedAt IS NULL THEN active_email ELSE NULL END,
         updated_at = @updatedAt
       WHERE id = @id RETURNING *`,
    );
    // Read and write in one transaction: a key revoked meanwhile is never re-tiered.
    this.updateRow = this.db.transaction(
      (id: string, patch: Partial<Pick<KeyRecord, 'tier' | 'revokedAt'>>) => {
        const current = this.byIdOrDigest.get(id, id);
        if (!current) return null;
        if (patch.tier !== undefined && current.revoked_at !== null) {
          throw new KeyRevokedError(current.id);
        }
        const row = update.get({
          id: current.id,
          tier: patch.tier ?? null,
          revokedAt: patch.revokedAt ?? null,
          updatedAt: new Date().toISOString(),
        });
        return row ? toRecord(row) : null;
      },
    );
    this.changesAfter = this.db.prepare<
      [number],
      { seq: number; key_id: string | null; digest: string }
    >('SELECT seq, key_id, digest FROM key_changes WHERE seq > ? ORDER BY seq');
    // Where the log stands, even when every row has been pruned.
    this.lastChange = this.db
      .prepare<[], number>(
        "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'key_changes'), 0)",
      )
      .pluck();
    const rollRow = this.db.prepare<[Record<string, unknown>], KeyRow>(
      `UPDATE api_keys SET
         digest = @digest,
         previous_digest = CASE WHEN @previousExpiresAt > @now THEN digest ELSE NULL END,
         previous_expires_at = CASE WHEN @previousExpiresAt > @now THEN @previousExpiresAt END,
         updated_at = @now
       WHERE id = @id RETURNING *`,
    );
    this.rollRow = this.db.transaction((idOrDigest: string, roll: KeyRoll) => {
      const current = this.byIdOrDigest.get(idOrDigest, idOrDigest);
      if (!current) return null;
      if (current.revoked_at !== null) throw new KeyRevokedError(current.id);
      const row = rollRow.get({ id: current.id, ...roll });
      return row ? toRecord(row) : null;
    });
    importLegacyFile(this.db, dataDir, this.insertRow);
  }

  async create(record: KeyRecord): Promise<void> {
    try {
      this.insertRow.run({
        ...record,
        activeEmail: record.revokedAt === null ? record.email.toLowerCase() : null,
      });
    } catch (err) {
      if (isUniqueViolation(err, 'active_email')) throw new EmailTakenError(record.email);
      throw err;
    }
  }

  async findByDigest(digest: string): Promise<KeyRecord | null> {
    const row = this.byDigest.get({ digest, now: new Date().toISOString() });
    return row ? toRecord(row) : null;
  }

  async roll(idOrDigest: string, roll: KeyRoll): Promise<KeyRecord | null> {
    return this.rollRow.immediate(idOrDigest, roll);
  }

  async find(idOrDigest: string): Promise<KeyRecord | null> {
    const row = this.byIdOrDigest.get(idOrDigest, idOrDigest);
    return row ? toRecord(row) : null;
  }

  async list(): Promise<KeyRecord[]> {
    return this.all.all().map(toRecord);
  }

  async update(
    id: string,
    patch: Partial<Pick<KeyRecord, 'tier' | 'revokedAt'>>,
  ): Promise<KeyRecord | null> {
    // IMMEDIATE: the write lock is taken before the read, so it never has to be upgraded
    // (an upgrade fails at once with SQLITE_BUSY when another process wrote meanwhile).
    return this.updateRow.immediate(id, patch);
  }

  async changesSince(cursor?: string): Promise<KeyChanges> {
    const after = Number(cursor);
    if (cursor === undefined || !Number.isSafeInteger(after)) {
      return { cursor: String(this.lastChange.get()), keyIds: [], digests: [] };
    }
    const rows = this.changesAfter.all(after);
    const last = rows.at(-1)?.seq ?? (this.lastChange.get() as number);
    // Rows after the cursor were pruned before this gateway read them.
    const missed = rows.length === 0 ? last > after : rows[0]!.seq > after + 1;
    if (missed) return { cursor: String(last), missed: true };
    return {
      cursor: String(last),
      // Rows logged before key ids were: their digest alone.
      keyIds: rows.flatMap((row) => (row.key_id === null ? [] : [row.key_id])),
      digests: rows.map((row) => row.digest),
    };
  }

  async ping(): Promise<void> {
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

/**
 * Imports `api-keys.json` of earlier versions once, in one transaction, then renames it so
 * that it is never read again. Keys are never dropped: a second active key for one email (the
 * old file store could write those) stays valid but no longer holds the email.
 */
function importLegacyFile(
  db: EmbeddedDatabase,
  dataDir: string,
  insertRow: ReturnType<EmbeddedDatabase['prepare']>,
): void {
  const file = path.join(dataDir, LEGACY_KEYS_FILE);
  if (!existsSync(file)) return;
  const importAll = db.transaction(() => {
    // Another process may have imported and renamed it while we waited for the lock.
    if (!existsSync(file)) return;
    // Keys of those versions had no rolls.
    const { keys } = JSON.parse(readFileSync(file, 'utf8')) as {
      keys: Omit<KeyRecord, 'previousDigest' | 'previousExpiresAt'>[];
    };
    const taken = new Set(
      db
        .prepare<[], { active_email: string }>(
          'SELECT active_email FROM api_keys WHERE active_email IS NOT NULL',
        )
        .all()
        .map((r) => r.active_email),
    );
    const exists = db.prepare<[string], { id: string }>('SELECT id FROM api_keys WHERE id = ?');
    for (const key of keys) {
      if (exists.get(key.id)) continue;
      const email = key.email.toLowerCase();
      const holdsEmail = key.revokedAt === null && !taken.has(email);
      if (holdsEmail) taken.add(email);
      insertRow.run({
        ...key,
        activeEmail: holdsEmail ? email : null,
        previousDigest: null,
        previousExpiresAt: null,
      });
    }
    renameSync(file, `${file}.imported`);
  });
  importAll.immediate();
}
