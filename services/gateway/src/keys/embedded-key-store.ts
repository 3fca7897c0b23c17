import { EmbeddedSearchAnalytics, createSearchTable } from '../analytics/embedded-search-analytics';
import { EmbeddedOAuthStore, createOAuthTable } from '../oauth/embedded-oauth-store';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import {
  type EmbeddedDatabase,
  openEmbeddedDatabase,
} from '../../../shared/embedded/embedded-database';
import {
  EmailTakenError,
  type EndReason,
  ENDED_SECRETS_KEPT,
  KeyChangedError,
  type KeyChanges,
  type KeyActor,
  type KeyEvent,
  KEY_EVENTS_RETENTION_DAYS,
  type KeyPatch,
  KeyRevokedError,
  type KeyUse,
  OPERATOR,
  type KeyRecord,
  type KeyRoll,
  type KeyStore,
  type SecretMatch,
} from './key-store';
import { createdEvent, eventsOfPatch, leakedPreviousEvent, rollEvent } from './key-events';
import { secretsEndedByRoll } from './secret-lifecycle';

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
  // A secret's lifecycle: why a key was revoked (a leak's URL), when it ends, and the secrets that
  // ended (rolled away, a leaked previous one), so presenting one says why it no longer works.
  (db: EmbeddedDatabase) =>
    db.exec(`ALTER TABLE api_keys ADD COLUMN revoked_reason TEXT;
    ALTER TABLE api_keys ADD COLUMN revoked_url TEXT;
    ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
    UPDATE api_keys SET revoked_reason = 'revoked' WHERE revoked_at IS NOT NULL;
    CREATE TABLE ended_secrets (
      digest TEXT PRIMARY KEY,
      key_id TEXT NOT NULL REFERENCES api_keys (id),
      reason TEXT NOT NULL,
      at TEXT NOT NULL,
      url TEXT
    );
    CREATE INDEX ended_secrets_key ON ended_secrets (key_id, at)`),
  // Restricted keys, last use, and key events. The change log follows the columns that change
  // what a key may do, not the minute of its last use.
  (db: EmbeddedDatabase) =>
    db.exec(`ALTER TABLE api_keys ADD COLUMN scopes TEXT;
    ALTER TABLE api_keys ADD COLUMN allowed_addresses TEXT;
    ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;
    CREATE TABLE key_events (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      key_id TEXT NOT NULL,
      type TEXT NOT NULL,
      at TEXT NOT NULL,
      by TEXT NOT NULL,
      address TEXT,
      detail TEXT NOT NULL
    );
    CREATE INDEX key_events_key ON key_events (key_id, at);
    CREATE INDEX key_events_at ON key_events (at);
    DROP TRIGGER api_keys_updated;
    CREATE TRIGGER api_keys_updated AFTER UPDATE OF digest, tier, revoked_at, previous_digest,
      previous_expires_at, expires_at, scopes, allowed_addresses ON api_keys BEGIN
      DELETE FROM key_changes WHERE at < unixepoch() - ${CHANGE_LOG_RETENTION_S};
      INSERT INTO key_changes (key_id, digest, at) VALUES (NEW.id, NEW.digest, unixepoch());
    END`),
  // The OAuth authorization server's clients, grants, codes and tokens.
  createOAuthTable,
  // Search analytics: searches per key, query and day.
  createSearchTable,
];

interface EndedRow {
  digest: string;
  keyId: string;
  reason: EndReason;
  at: string;
  url: string | null;
}

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
  revoked_reason: KeyRecord['revokedReason'];
  revoked_url: string | null;
  expires_at: string | null;
  previous_digest: string | null;
  previous_expires_at: string | null;
  /** JSON arrays, or null. */
  scopes: string | null;
  allowed_addresses: string | null;
  last_used_at: string | null;
  active_email: string | null;
}

/** A row of a lookup by secret: the key, and the ended secret when the digest is one. */
interface MatchRow extends KeyRow {
  ended_reason: EndReason | null;
  ended_at: string | null;
  ended_url: string | null;
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
    revokedReason: row.revoked_reason,
    revokedUrl: row.revoked_url,
    expiresAt: row.expires_at,
    previousDigest: row.previous_digest,
    previousExpiresAt: row.previous_expires_at,
    scopes: row.scopes === null ? null : (JSON.parse(row.scopes) as KeyRecord['scopes']),
    allowedAddresses:
      row.allowed_addresses === null ? null : (JSON.parse(row.allowed_addresses) as string[]),
    lastUsedAt: row.last_used_at,
  };
}

/** A list as its column holds it: JSON, or NULL for none. */
function listColumn(value: readonly string[] | null | undefined): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

function toMatch(row: MatchRow, digest: string): SecretMatch {
  return {
    record: toRecord(row),
    ended:
      row.ended_reason === null
        ? null
        : { digest, reason: row.ended_reason, at: row.ended_at!, url: row.ended_url },
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

type EventRecorder = (keyId: string, events: readonly KeyEvent[]) => void;
type SecretEnder = (row: EndedRow) => void;
type ByIdOrDigest = ReturnType<typeof keyReads>['byIdOrDigest'];

/** The store's reads, each on its own index. */
function keyReads(db: EmbeddedDatabase) {
  return {
    // The key of a secret, whichever of its secrets it is (each query uses its own index).
    byDigest: db.prepare<[{ digest: string }], MatchRow>(
      `SELECT k.*, NULL AS ended_reason, NULL AS ended_at, NULL AS ended_url
         FROM api_keys k WHERE k.digest = @digest
       UNION ALL
       SELECT k.*, NULL, NULL, NULL FROM api_keys k WHERE k.previous_digest = @digest
       UNION ALL
       SELECT k.*, e.reason, e.at, e.url
         FROM ended_secrets e JOIN api_keys k ON k.id = e.key_id WHERE e.digest = @digest`,
    ),
    byIdOrDigest: db.prepare<[string, string], KeyRow>(
      'SELECT * FROM api_keys WHERE id = ? OR digest = ?',
    ),
    all: db.prepare<[], KeyRow>('SELECT * FROM api_keys ORDER BY created_at, id'),
    eventsOf: db.prepare<[string, string], Omit<KeyEvent, 'detail'> & { detail: string }>(
      `SELECT type, at, by, address, detail FROM key_events
       WHERE key_id = ? AND at >= ? ORDER BY at DESC, seq DESC`,
    ),
    changesAfter: db.prepare<[number], { seq: number; key_id: string | null; digest: string }>(
      'SELECT seq, key_id, digest FROM key_changes WHERE seq > ? ORDER BY seq',
    ),
    // Where the log stands, even when every row has been pruned.
    lastChange: db
      .prepare<[], number>(
        "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'key_changes'), 0)",
      )
      .pluck(),
  };
}

function insertStatement(db: EmbeddedDatabase) {
  return db.prepare(
    `INSERT INTO api_keys (id, digest, tier, email, name, use_case, created_at, updated_at,
       revoked_at, revoked_reason, revoked_url, expires_at, active_email, previous_digest,
       previous_expires_at, scopes, allowed_addresses, last_used_at)
     VALUES (@id, @digest, @tier, @email, @name, @useCase, @createdAt, @updatedAt, @revokedAt,
       @revokedReason, @revokedUrl, @expiresAt, @activeEmail, @previousDigest,
       @previousExpiresAt, @scopes, @allowedAddresses, @lastUsedAt)`,
  );
}

/**
 * Stores a change's events, pruning those past KEY_EVENTS_RETENTION_DAYS; called in the
 * transaction of the change itself, so a change and its event are stored together.
 */
function eventRecorder(db: EmbeddedDatabase): EventRecorder {
  const insertEvent = db.prepare<[Record<string, unknown>]>(
    `INSERT INTO key_events (key_id, type, at, by, address, detail)
     VALUES (@keyId, @type, @at, @by, @address, @detail)`,
  );
  const pruneEvents = db.prepare<[string]>('DELETE FROM key_events WHERE at < ?');
  return (keyId, events) => {
    if (events.length === 0) return;
    const cutoff = Date.now() - KEY_EVENTS_RETENTION_DAYS * 86_400_000;
    pruneEvents.run(new Date(cutoff).toISOString());
    for (const { detail, ...event } of events) {
      insertEvent.run({ keyId, ...event, detail: JSON.stringify(detail) });
    }
  };
}

/** Remembers an ended secret; a key keeps its newest ENDED_SECRETS_KEPT. */
function secretEnder(db: EmbeddedDatabase): SecretEnder {
  const endSecret = db.prepare<[EndedRow]>(
    `INSERT OR REPLACE INTO ended_secrets (digest, key_id, reason, at, url)
     VALUES (@digest, @keyId, @reason, @at, @url)`,
  );
  const pruneEnded = db.prepare<[{ keyId: string }]>(
    `DELETE FROM ended_secrets WHERE key_id = @keyId AND digest NOT IN (
       SELECT digest FROM ended_secrets WHERE key_id = @keyId
       ORDER BY at DESC, rowid DESC LIMIT ${ENDED_SECRETS_KEPT})`,
  );
  return (row) => {
    endSecret.run(row);
    pruneEnded.run({ keyId: row.keyId });
  };
}

/** Last uses written in one transaction, each only forward in time; returns how many changed. */
function useTransaction(db: EmbeddedDatabase) {
  const useRow = db.prepare<[KeyUse]>(
    `UPDATE api_keys SET last_used_at = @minute
     WHERE id = @keyId AND (last_used_at IS NULL OR last_used_at < @minute)`,
  );
  return db.transaction((uses: readonly KeyUse[]) =>
    uses.reduce((written, use) => written + useRow.run(use).changes, 0),
  );
}

/**
 * Read and write in one transaction: a key revoked meanwhile is never changed, and keeps its
 * first revocation (its time, reason and URL).
 */
function updateTransaction(
  db: EmbeddedDatabase,
  byIdOrDigest: ByIdOrDigest,
  record: EventRecorder,
) {
  const update = db.prepare<[Record<string, unknown>], KeyRow>(
    `UPDATE api_keys SET tier = @tier, revoked_at = @revokedAt, revoked_reason = @revokedReason,
       revoked_url = @revokedUrl, active_email = @activeEmail, expires_at = @expiresAt,
       scopes = @scopes, allowed_addresses = @allowedAddresses, updated_at = @updatedAt
     WHERE id = @id RETURNING *`,
  );
  return db.transaction((id: string, patch: KeyPatch, actor: KeyActor) => {
    const current = byIdOrDigest.get(id, id);
    if (!current) return null;
    const before = toRecord(current);
    if (before.revokedAt !== null) {
      if (patch.revokedAt === undefined) throw new KeyRevokedError(current.id);
      return before;
    }
    const revoking = patch.revokedAt !== undefined && patch.revokedAt !== null;
    const now = new Date().toISOString();
    const row = update.get({
      id: current.id,
      tier: patch.tier ?? before.tier,
      revokedAt: revoking ? patch.revokedAt : null,
      revokedReason: revoking ? (patch.revokedReason ?? 'revoked') : null,
      revokedUrl: revoking ? (patch.revokedUrl ?? null) : null,
      activeEmail: revoking ? null : current.active_email,
      expiresAt: patch.expiresAt === undefined ? before.expiresAt : patch.expiresAt,
      scopes: listColumn(patch.scopes === undefined ? before.scopes : patch.scopes),
      allowedAddresses: listColumn(
        patch.allowedAddresses === undefined ? before.allowedAddresses : patch.allowedAddresses,
      ),
      updatedAt: now,
    });
    record(current.id, eventsOfPatch(before, patch, actor, now));
    return row ? toRecord(row) : null;
  });
}

/**
 * Read, compare and write in one IMMEDIATE transaction: rolls of one key, from any process,
 * happen one after the other, and one that lost its `ifCurrent` changes nothing.
 */
function rollTransaction(
  db: EmbeddedDatabase,
  byIdOrDigest: ByIdOrDigest,
  record: EventRecorder,
  ended: SecretEnder,
) {
  const rollRow = db.prepare<[Record<string, unknown>], KeyRow>(
    `UPDATE api_keys SET
       digest = @digest,
       previous_digest = CASE WHEN @previousExpiresAt > @now THEN digest ELSE NULL END,
       previous_expires_at = CASE WHEN @previousExpiresAt > @now THEN @previousExpiresAt END,
       expires_at = CASE WHEN @keepsEnd THEN expires_at ELSE @expiresAt END,
       updated_at = @now
     WHERE id = @id RETURNING *`,
  );
  return db.transaction((idOrDigest: string, roll: KeyRoll, actor: KeyActor) => {
    const current = byIdOrDigest.get(idOrDigest, idOrDigest);
    if (!current) return null;
    if (current.revoked_at !== null) throw new KeyRevokedError(current.id);
    if (roll.ifCurrent !== undefined && current.digest !== roll.ifCurrent) {
      throw new KeyChangedError(current.id);
    }
    for (const { digest, at } of secretsEndedByRoll(toRecord(current), roll)) {
      ended({ digest, keyId: current.id, reason: 'rolled', at, url: null });
    }
    const row = rollRow.get({
      id: current.id,
      digest: roll.digest,
      previousExpiresAt: roll.previousExpiresAt,
      now: roll.now,
      keepsEnd: roll.expiresAt === undefined ? 1 : 0,
      expiresAt: roll.expiresAt ?? null,
    });
    record(current.id, [rollEvent(roll, actor)]);
    return row ? toRecord(row) : null;
  });
}

/** Ends a key's previous secret (a leak reported of it), if it is still the previous one. */
function endPreviousTransaction(
  db: EmbeddedDatabase,
  byIdOrDigest: ByIdOrDigest,
  record: EventRecorder,
  ended: SecretEnder,
) {
  const dropPrevious = db.prepare<[{ id: string; now: string }], KeyRow>(
    `UPDATE api_keys SET previous_digest = NULL, previous_expires_at = NULL, updated_at = @now
     WHERE id = @id RETURNING *`,
  );
  return db.transaction(
    (id: string, digest: string, reason: EndReason, url: string | null, actor: KeyActor) => {
      const current = byIdOrDigest.get(id, id);
      if (!current || current.previous_digest !== digest) return null;
      const now = new Date().toISOString();
      ended({ digest, keyId: current.id, reason, at: now, url });
      const row = dropPrevious.get({ id: current.id, now });
      record(current.id, [leakedPreviousEvent(url, actor, now)]);
      return row ? toRecord(row) : null;
    },
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
  private readonly endPrevious;
  private readonly changesAfter;
  private readonly lastChange;
  private readonly createRow;
  private readonly usedAt;
  private readonly eventsOf;
  private readonly recordEvents;
  readonly oauth: EmbeddedOAuthStore;
  readonly searches: EmbeddedSearchAnalytics;

  constructor(dataDir: string) {
    this.db = openEmbeddedDatabase(dataDir, KEYS_DATABASE_FILE, MIGRATIONS);
    const reads = keyReads(this.db);
    this.byDigest = reads.byDigest;
    this.byIdOrDigest = reads.byIdOrDigest;
    this.all = reads.all;
    this.eventsOf = reads.eventsOf;
    this.changesAfter = reads.changesAfter;
    this.lastChange = reads.lastChange;
    const record = eventRecorder(this.db);
    this.recordEvents = this.db.transaction(record);
    this.oauth = new EmbeddedOAuthStore(this.db);
    this.searches = new EmbeddedSearchAnalytics(this.db);
    const ended = secretEnder(this.db);
    this.insertRow = insertStatement(this.db);
    this.createRow = this.db.transaction((key: KeyRecord, actor: KeyActor) => {
      this.insertRow.run({
        ...key,
        scopes: listColumn(key.scopes),
        allowedAddresses: listColumn(key.allowedAddresses),
        activeEmail: key.revokedAt === null ? key.email.toLowerCase() : null,
      });
      record(key.id, [createdEvent(key, actor)]);
    });
    this.usedAt = useTransaction(this.db);
    this.updateRow = updateTransaction(this.db, this.byIdOrDigest, record);
    this.rollRow = rollTransaction(this.db, this.byIdOrDigest, record, ended);
    this.endPrevious = endPreviousTransaction(this.db, this.byIdOrDigest, record, ended);
    importLegacyFile(this.db, dataDir, this.insertRow);
  }

  async create(record: KeyRecord, actor: KeyActor = OPERATOR): Promise<void> {
    try {
      this.createRow.immediate(record, actor);
    } catch (err) {
      if (isUniqueViolation(err, 'active_email')) throw new EmailTakenError(record.email);
      throw err;
    }
  }

  async findByDigest(digest: string): Promise<SecretMatch | null> {
    const row = this.byDigest.get({ digest });
    return row ? toMatch(row, digest) : null;
  }

  async roll(
    idOrDigest: string,
    roll: KeyRoll,
    actor: KeyActor = OPERATOR,
  ): Promise<KeyRecord | null> {
    return this.rollRow.immediate(idOrDigest, roll, actor);
  }

  async endPreviousSecret(
    id: string,
    digest: string,
    reason: EndReason,
    url: string | null,
    actor: KeyActor = OPERATOR,
  ): Promise<KeyRecord | null> {
    return this.endPrevious.immediate(id, digest, reason, url, actor);
  }

  async recordUse(uses: readonly KeyUse[]): Promise<number> {
    return uses.length === 0 ? 0 : this.usedAt.immediate(uses);
  }

  async events(keyId: string, since: string): Promise<KeyEvent[]> {
    return this.eventsOf
      .all(keyId, since)
      .map((row) => ({ ...row, detail: JSON.parse(row.detail) as KeyEvent['detail'] }));
  }

  async find(idOrDigest: string): Promise<KeyRecord | null> {
    const row = this.byIdOrDigest.get(idOrDigest, idOrDigest);
    return row ? toRecord(row) : null;
  }

  async list(): Promise<KeyRecord[]> {
    return this.all.all().map(toRecord);
  }

  async update(id: string, patch: KeyPatch, actor: KeyActor = OPERATOR): Promise<KeyRecord | null> {
    // IMMEDIATE: the write lock is taken before the read, so it never has to be upgraded
    // (an upgrade fails at once with SQLITE_BUSY when another process wrote meanwhile).
    return this.updateRow.immediate(id, patch, actor);
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

  async recordEvent(keyId: string, event: KeyEvent): Promise<void> {
    this.recordEvents.immediate(keyId, [event]);
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
      keys: Pick<
        KeyRecord,
        'id' | 'digest' | 'tier' | 'email' | 'name' | 'useCase' | 'createdAt' | 'updatedAt'
      >[] &
        { revokedAt: string | null }[];
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
        revokedReason: key.revokedAt === null ? null : 'revoked',
        revokedUrl: null,
        expiresAt: null,
        previousDigest: null,
        previousExpiresAt: null,
        scopes: null,
        allowedAddresses: null,
        lastUsedAt: null,
      });
    }
    renameSync(file, `${file}.imported`);
  });
  importAll.immediate();
}
