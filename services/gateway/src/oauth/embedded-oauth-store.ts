import type { EmbeddedDatabase } from '../../../shared/embedded/embedded-database';
import {
  AlreadyConsumedError,
  type OAuthRecord,
  type OAuthRefs,
  type OAuthStore,
} from './oauth-store';

/** The table of keys.db's migration that holds the authorization server's records. */
export function createOAuthTable(db: EmbeddedDatabase): void {
  db.exec(`CREATE TABLE oauth_records (
      model TEXT NOT NULL,
      id TEXT NOT NULL,
      payload TEXT NOT NULL,
      grant_id TEXT,
      uid TEXT,
      user_code TEXT,
      expires_at INTEGER,
      consumed_at INTEGER,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (model, id)
    );
    CREATE INDEX oauth_records_grant ON oauth_records (grant_id) WHERE grant_id IS NOT NULL;
    CREATE INDEX oauth_records_uid ON oauth_records (model, uid) WHERE uid IS NOT NULL;
    CREATE INDEX oauth_records_expiry ON oauth_records (expires_at) WHERE expires_at IS NOT NULL`);
}

interface Row {
  id: string;
  payload: string;
  consumed_at: number | null;
}

function record(row: Row | undefined): OAuthRecord | null {
  if (row === undefined) return null;
  const payload = JSON.parse(row.payload) as Record<string, unknown>;
  if (row.consumed_at !== null) payload.consumed = Math.floor(row.consumed_at / 1000);
  return { id: row.id, payload };
}

/** The authorization server's records in keys.db: every gateway on this DATA_DIR shares them. */
export class EmbeddedOAuthStore implements OAuthStore {
  private readonly statements;

  constructor(db: EmbeddedDatabase) {
    const live = '(expires_at IS NULL OR expires_at > @now)';
    this.statements = {
      upsert: db.prepare(
        `INSERT INTO oauth_records
           (model, id, payload, grant_id, uid, user_code, expires_at, consumed_at, created_at)
         VALUES (@model, @id, @payload, @grantId, @uid, @userCode, @expiresAt, NULL, @now)
         ON CONFLICT (model, id) DO UPDATE SET payload = excluded.payload,
           grant_id = excluded.grant_id, uid = excluded.uid, user_code = excluded.user_code,
           expires_at = excluded.expires_at`,
      ),
      find: db.prepare<Record<string, unknown>, Row>(
        `SELECT id, payload, consumed_at FROM oauth_records
         WHERE model = @model AND id = @id AND ${live}`,
      ),
      byUid: db.prepare<Record<string, unknown>, Row>(
        `SELECT id, payload, consumed_at FROM oauth_records
         WHERE model = @model AND uid = @value AND ${live}`,
      ),
      byUserCode: db.prepare<Record<string, unknown>, Row>(
        `SELECT id, payload, consumed_at FROM oauth_records
         WHERE model = @model AND user_code = @value AND ${live}`,
      ),
      consume: db.prepare(
        `UPDATE oauth_records SET consumed_at = @now
         WHERE model = @model AND id = @id AND consumed_at IS NULL`,
      ),
      destroy: db.prepare('DELETE FROM oauth_records WHERE model = @model AND id = @id'),
      revoke: db.prepare('DELETE FROM oauth_records WHERE grant_id = ?'),
      all: db.prepare<Record<string, unknown>, Row>(
        `SELECT id, payload, consumed_at FROM oauth_records
         WHERE model = @model AND ${live} ORDER BY created_at, id`,
      ),
      // Expired records are of no use to anyone: each write takes a few of them away.
      sweep: db.prepare(
        `DELETE FROM oauth_records WHERE rowid IN (SELECT rowid FROM oauth_records
         WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT 20)`,
      ),
    };
  }

  async upsert(
    model: string,
    id: string,
    payload: Record<string, unknown>,
    expiresAt: number | null,
    refs: OAuthRefs,
  ): Promise<void> {
    const now = Date.now();
    this.statements.sweep.run(now);
    this.statements.upsert.run({
      model,
      id,
      payload: JSON.stringify(payload),
      grantId: refs.grantId ?? null,
      uid: refs.uid ?? null,
      userCode: refs.userCode ?? null,
      expiresAt,
      now,
    });
  }

  async find(model: string, id: string): Promise<OAuthRecord | null> {
    return record(this.statements.find.get({ model, id, now: Date.now() }));
  }

  async findBy(model: string, ref: 'uid' | 'userCode', value: string) {
    const statement = ref === 'uid' ? this.statements.byUid : this.statements.byUserCode;
    return record(statement.get({ model, value, now: Date.now() }));
  }

  async consume(model: string, id: string): Promise<void> {
    const { changes } = this.statements.consume.run({ model, id, now: Date.now() });
    if (changes === 0) throw new AlreadyConsumedError(`${model} ${id} was already used`);
  }

  async destroy(model: string, id: string): Promise<void> {
    this.statements.destroy.run({ model, id });
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    this.statements.revoke.run(grantId);
  }

  async all(model: string): Promise<OAuthRecord[]> {
    return this.statements.all.all({ model, now: Date.now() }).map((row) => record(row)!);
  }
}
