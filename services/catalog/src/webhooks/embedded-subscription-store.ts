import {
  type EmbeddedDatabase,
  openEmbeddedDatabase,
} from '../../../shared/embedded/embedded-database';
import {
  type KeyStatus,
  MAX_SUBSCRIPTIONS_PER_KEY,
  type SubscribableEvent,
  type Subscription,
  type SubscriptionStore,
  TooManySubscriptionsError,
} from './webhook-types';

export const WEBHOOKS_DATABASE_FILE = 'webhooks.db';

const MIGRATIONS = [
  (db: EmbeddedDatabase) =>
    db.exec(`
      CREATE TABLE subscriptions (
        id TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        url TEXT NOT NULL,
        -- A JSON array of event types, matched with json_each.
        events TEXT NOT NULL,
        description TEXT,
        secret TEXT NOT NULL,
        created_at TEXT NOT NULL,
        disabled_at TEXT
      );
      CREATE INDEX subscriptions_by_key ON subscriptions (key_id, created_at, id);
      CREATE TABLE key_status (
        key_id TEXT PRIMARY KEY,
        tier TEXT NOT NULL,
        revoked INTEGER NOT NULL
      );
    `),
];

interface SubscriptionRow {
  id: string;
  key_id: string;
  url: string;
  events: string;
  description: string | null;
  secret: string;
  created_at: string;
  disabled_at: string | null;
}

function toSubscription(row: SubscriptionRow): Subscription {
  return {
    id: row.id,
    keyId: row.key_id,
    url: row.url,
    events: JSON.parse(row.events) as SubscribableEvent[],
    description: row.description,
    secret: row.secret,
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
  };
}

/**
 * Subscriptions in `DATA_DIR/webhooks.db` (SQLite), for the embedded setup: every catalog
 * process and replica sharing DATA_DIR sees the same subscriptions, and the per-key limit holds
 * across them because the count and the insert share one IMMEDIATE transaction.
 */
export class EmbeddedSubscriptionStore implements SubscriptionStore {
  readonly kind = 'embedded';
  private readonly db: EmbeddedDatabase;
  private readonly insert;
  private readonly byKey;
  private readonly byKeyAndId;
  private readonly remove;
  private readonly matchingRows;
  private readonly disableRow;
  private readonly upsertKeyStatus;

  constructor(dataDir: string) {
    this.db = openEmbeddedDatabase(dataDir, WEBHOOKS_DATABASE_FILE, MIGRATIONS);
    const count = this.db.prepare<[string], { n: number }>(
      'SELECT count(*) AS n FROM subscriptions WHERE key_id = ?',
    );
    const insertRow = this.db.prepare<[Record<string, unknown>]>(
      `INSERT INTO subscriptions (id, key_id, url, events, description, secret, created_at,
         disabled_at)
       VALUES (@id, @keyId, @url, @events, @description, @secret, @createdAt, @disabledAt)`,
    );
    this.insert = this.db.transaction((subscription: Subscription) => {
      if (count.get(subscription.keyId)!.n >= MAX_SUBSCRIPTIONS_PER_KEY) {
        throw new TooManySubscriptionsError();
      }
      insertRow.run({ ...subscription, events: JSON.stringify(subscription.events) });
    });
    this.byKey = this.db.prepare<[string], SubscriptionRow>(
      'SELECT * FROM subscriptions WHERE key_id = ? ORDER BY created_at, id',
    );
    this.byKeyAndId = this.db.prepare<[string, string], SubscriptionRow>(
      'SELECT * FROM subscriptions WHERE key_id = ? AND id = ?',
    );
    this.remove = this.db.prepare<[string, string]>(
      'DELETE FROM subscriptions WHERE key_id = ? AND id = ?',
    );
    this.matchingRows = this.db.prepare<[{ type: string; keyId: string | null }], SubscriptionRow>(
      `SELECT s.* FROM subscriptions s JOIN key_status k ON k.key_id = s.key_id
       WHERE s.disabled_at IS NULL
         AND k.tier = 'enterprise' AND k.revoked = 0
         AND (@keyId IS NULL OR s.key_id = @keyId)
         AND EXISTS (SELECT 1 FROM json_each(s.events) WHERE value = @type)
       ORDER BY s.created_at, s.id`,
    );
    // The first 410 is the moment it was disabled; a later one changes nothing.
    this.disableRow = this.db.prepare<[string, string]>(
      'UPDATE subscriptions SET disabled_at = ? WHERE id = ? AND disabled_at IS NULL',
    );
    // A revocation is final (the gateway never un-revokes a key): a late "active" report, say
    // from a request that was already in flight, cannot bring deliveries back.
    this.upsertKeyStatus = this.db.prepare<[Record<string, unknown>]>(
      `INSERT INTO key_status (key_id, tier, revoked) VALUES (@keyId, @tier, @revoked)
       ON CONFLICT (key_id) DO UPDATE SET
         tier = excluded.tier,
         revoked = max(key_status.revoked, excluded.revoked)
       -- A status told again (every webhook call tells it) writes nothing.
       WHERE key_status.tier != excluded.tier OR key_status.revoked < excluded.revoked`,
    );
  }

  async create(subscription: Subscription): Promise<void> {
    // IMMEDIATE: the write lock is taken before the count, so two processes cannot both see 9.
    this.insert.immediate(subscription);
  }

  async list(keyId: string): Promise<Subscription[]> {
    return this.byKey.all(keyId).map(toSubscription);
  }

  async get(keyId: string, id: string): Promise<Subscription | null> {
    const row = this.byKeyAndId.get(keyId, id);
    return row ? toSubscription(row) : null;
  }

  async delete(keyId: string, id: string): Promise<boolean> {
    return this.remove.run(keyId, id).changes > 0;
  }

  async matching(type: SubscribableEvent, keyId?: string): Promise<Subscription[]> {
    return this.matchingRows.all({ type, keyId: keyId ?? null }).map(toSubscription);
  }

  async disable(id: string, at: string): Promise<void> {
    this.disableRow.run(at, id);
  }

  async setKeyStatus(status: KeyStatus): Promise<void> {
    this.upsertKeyStatus.run({ ...status, revoked: status.revoked ? 1 : 0 });
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
