import { MongoSearchAnalytics } from '../analytics/mongo-search-analytics';
import { MongoOAuthStore } from '../oauth/mongo-oauth-store';
import {
  type Collection,
  type Document,
  type Filter,
  type UpdateFilter,
  type IndexDescription,
  type MongoClient,
  MongoServerError,
} from 'mongodb';
import { connectMongo } from '../../../shared/mongo';
import {
  EmailTakenError,
  type EndedSecret,
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

/** Fields that documents written before rolls, revocation reasons and expiry existed lack. */
type LaterFields =
  | 'revokedReason'
  | 'revokedUrl'
  | 'expiresAt'
  | 'previousDigest'
  | 'previousExpiresAt'
  | 'scopes'
  | 'allowedAddresses'
  | 'lastUsedAt';

/**
 * A key's document: its record, and its ended secrets newest first (at most ENDED_SECRETS_KEPT),
 * inside it so that a roll or a leak report changes one document atomically.
 */
export type KeyDocument = Omit<KeyRecord, LaterFields> &
  Partial<Pick<KeyRecord, LaterFields>> & {
    emailLower: string;
    active: boolean;
    endedSecrets?: EndedSecret[];
  };

export const KEYS_COLLECTION = 'api_keys';
export const KEY_EVENTS_COLLECTION = 'key_events';

/** A key event as stored: `atDate` lets MongoDB drop it after KEY_EVENTS_RETENTION_DAYS. */
type KeyEventDocument = KeyEvent & { keyId: string; atDate: Date };

/** A key's events newest first; expired after the retention by a TTL index. */
export const KEY_EVENT_INDEXES: IndexDescription[] = [
  { key: { keyId: 1, at: -1 }, name: 'key_at' },
  {
    key: { atDate: 1 },
    name: 'retention',
    expireAfterSeconds: KEY_EVENTS_RETENTION_DAYS * 86_400,
  },
];

export function keyEventDocuments(keyId: string, events: readonly KeyEvent[]): KeyEventDocument[] {
  return events.map((event) => ({ ...event, keyId, atDate: new Date(event.at) }));
}

/**
 * Last use, one conditional update per key and minute: only the first replica to report a minute
 * changes the document (and never `updatedAt`, so the change log does not see it).
 */
export function keyUseUpdates(uses: readonly KeyUse[]) {
  return uses.map(({ keyId, minute }) => ({
    updateOne: {
      filter: { id: keyId, $or: [{ lastUsedAt: null }, { lastUsedAt: { $lt: minute } }] },
      update: { $set: { lastUsedAt: minute } },
    },
  }));
}

/** Lookups by digest and id; at most one *active* key per email, enforced by the server. */
export const KEY_INDEXES: IndexDescription[] = [
  { key: { digest: 1 }, name: 'digest_unique', unique: true },
  { key: { id: 1 }, name: 'id_unique', unique: true },
  // A rolled key's previous secret, while it has one.
  {
    key: { previousDigest: 1 },
    name: 'previous_digest_unique',
    unique: true,
    partialFilterExpression: { previousDigest: { $type: 'string' } },
  },
  { key: { 'endedSecrets.digest': 1 }, name: 'ended_secret_digest' },
  // The change log every gateway polls (changesSince).
  { key: { updatedAt: 1 }, name: 'updated_at' },
  {
    key: { emailLower: 1 },
    name: 'active_email_unique',
    unique: true,
    partialFilterExpression: { active: true },
  },
];

const PROJECTION = { _id: 0, emailLower: 0, active: 0 } as const;
/** A key's document as read (PROJECTION): the fields of the record and its ended secrets. */
type StoredKey = Omit<KeyDocument, 'emailLower' | 'active'>;
const DUPLICATE_KEY = 11000;

/**
 * The update of a key, on an active key only (the filter misses a revoked one): a revoked key is
 * never re-tiered and keeps its first revocation, its reason and URL.
 */
export function keyUpdate(
  id: string,
  patch: KeyPatch,
  now: string,
): { filter: Filter<KeyDocument>; update: UpdateFilter<KeyDocument> } {
  const set: Partial<KeyDocument> = { ...patch, updatedAt: now };
  if (patch.revokedAt) {
    set.active = false;
    set.revokedReason = patch.revokedReason ?? 'revoked';
    set.revokedUrl = patch.revokedUrl ?? null;
  }
  return { filter: { id, revokedAt: null }, update: { $set: set } };
}

/** A secret's key, whichever of its secrets it is: current, previous or ended. */
export function byDigestFilter(digest: string): Filter<KeyDocument> {
  return { $or: [{ digest }, { previousDigest: digest }, { 'endedSecrets.digest': digest }] };
}

/** Ended secrets put in front of the document's own, the newest ENDED_SECRETS_KEPT kept. */
function withEnded(ended: Document[]): Document {
  return {
    $slice: [{ $concatArrays: [...ended, { $ifNull: ['$endedSecrets', []] }] }, ENDED_SECRETS_KEPT],
  };
}

/**
 * A roll, in one server-side update: the current secret becomes the previous one (in the same
 * pipeline stage, `$digest` is still the current one) unless the grace ends now, and the new one
 * current; the secrets it ends go to the ended ones (as secretsEndedByRoll says, computed from
 * the document as it is); a revoked key is never rolled, and with `ifCurrent` a key whose current
 * secret changed meanwhile is not either (the filter misses them).
 */
export function keyRollUpdate(
  idOrDigest: string,
  { digest, previousExpiresAt, now, ifCurrent, expiresAt }: KeyRoll,
): { filter: Filter<KeyDocument>; update: Document[] } {
  const grace = previousExpiresAt > now;
  const rolled = (secret: string, at: unknown) => ({
    digest: secret,
    reason: 'rolled',
    at,
    url: null,
  });
  const endedPrevious = {
    $cond: [
      { $eq: [{ $ifNull: ['$previousDigest', null] }, null] },
      [],
      [rolled('$previousDigest', { $min: ['$previousExpiresAt', now] })],
    ],
  };
  return {
    filter: {
      $or: [{ id: idOrDigest }, { digest: idOrDigest }],
      revokedAt: null,
      ...(ifCurrent === undefined ? {} : { digest: ifCurrent }),
    },
    update: [
      {
        $set: {
          endedSecrets: withEnded([endedPrevious, grace ? [] : [rolled('$digest', now)]]),
          previousDigest: grace ? '$digest' : null,
          previousExpiresAt: grace ? previousExpiresAt : null,
          digest,
          updatedAt: now,
          ...(expiresAt !== undefined && { expiresAt: { $literal: expiresAt } }),
        },
      },
    ],
  };
}

/** Ends a key's previous secret (a reported leak): it joins the ended ones, the current stays. */
export function endPreviousUpdate(
  id: string,
  ended: EndedSecret,
): { filter: Filter<KeyDocument>; update: Document[] } {
  return {
    filter: { id, previousDigest: ended.digest },
    update: [
      {
        $set: {
          endedSecrets: withEnded([[{ $literal: ended }]]),
          previousDigest: null,
          previousExpiresAt: null,
          updatedAt: ended.at,
        },
      },
    ],
  };
}

/**
 * A stored document as a record: documents from before rolls, revocation reasons and expiry
 * existed have none of them.
 */
function toRecord(document: StoredKey | null): KeyRecord | null {
  if (document === null) return null;
  const record = { ...document };
  delete record.endedSecrets;
  return {
    ...record,
    revokedReason: document.revokedReason ?? (document.revokedAt ? 'revoked' : null),
    revokedUrl: document.revokedUrl ?? null,
    expiresAt: document.expiresAt ?? null,
    previousDigest: document.previousDigest ?? null,
    previousExpiresAt: document.previousExpiresAt ?? null,
    scopes: document.scopes ?? null,
    allowedAddresses: document.allowedAddresses ?? null,
    lastUsedAt: document.lastUsedAt ?? null,
  };
}

/** A document found by one of its secrets, as what the store knows of that secret. */
export function toSecretMatch(document: StoredKey, digest: string): SecretMatch {
  const ended =
    digest === document.digest || digest === document.previousDigest
      ? undefined
      : document.endedSecrets?.find((secret) => secret.digest === digest);
  return { record: toRecord(document)!, ended: ended ?? null };
}

/**
 * How far before the cursor each poll of the change log reads again: a change stamped by a writer
 * whose clock is behind, or committed after a later-stamped one, is still seen, as long as clocks
 * and commits are this close (docs/deploy.md).
 */
export const CHANGE_LOG_OVERLAP_MS = 10_000;

/** The poll of the change log after `cursor` (an `updatedAt`), reading the overlap again. */
export function keyChangesFilter(cursor: string): Filter<KeyDocument> {
  const since = new Date(Date.parse(cursor) - CHANGE_LOG_OVERLAP_MS).toISOString();
  return { updatedAt: { $gte: since } };
}

/**
 * The changes of a poll not already reported by an earlier one (`reported`: key id to the
 * `updatedAt` it was reported at, kept for the overlap and updated here), and the next cursor.
 */
export function newKeyChanges(
  cursor: string,
  rows: readonly Pick<KeyRecord, 'id' | 'digest' | 'updatedAt'>[],
  reported: Map<string, string>,
): { cursor: string; keyIds: string[]; digests: string[] } {
  let next = cursor;
  const keyIds: string[] = [];
  const digests: string[] = [];
  for (const { id, digest, updatedAt } of rows) {
    if (updatedAt > next) next = updatedAt;
    if (reported.get(id) === updatedAt) continue;
    reported.set(id, updatedAt);
    keyIds.push(id);
    digests.push(digest);
  }
  const forgetBefore = new Date(Date.parse(next) - 2 * CHANGE_LOG_OVERLAP_MS).toISOString();
  for (const [id, updatedAt] of reported) if (updatedAt < forgetBefore) reported.delete(id);
  return { cursor: next, keyIds, digests };
}

/** Keys in MongoDB, for production and any number of gateway replicas. */
export class MongoKeyStore implements KeyStore {
  readonly kind = 'mongodb';

  /** Changes reported by recent polls, so a change read again in the overlap is not news. */
  private readonly reported = new Map<string, string>();

  private constructor(
    private readonly client: MongoClient,
    private readonly keys: Collection<KeyDocument>,
    private readonly keyEvents: Collection<KeyEventDocument>,
    readonly oauth: MongoOAuthStore,
    readonly searches: MongoSearchAnalytics,
  ) {}

  static async connect(uri: string, dbName: string): Promise<MongoKeyStore> {
    const client = await connectMongo(uri, 'tool-directory-gateway');
    const keys = client.db(dbName).collection<KeyDocument>(KEYS_COLLECTION);
    await keys.createIndexes(KEY_INDEXES);
    const keyEvents = client.db(dbName).collection<KeyEventDocument>(KEY_EVENTS_COLLECTION);
    await keyEvents.createIndexes(KEY_EVENT_INDEXES);
    const oauth = await MongoOAuthStore.open(client.db(dbName));
    const searches = await MongoSearchAnalytics.open(client.db(dbName));
    return new MongoKeyStore(client, keys, keyEvents, oauth, searches);
  }

  /**
   * Records a change's events after the change (two collections: a crash in between loses the
   * event, never the change).
   */
  private async record(keyId: string, events: readonly KeyEvent[]): Promise<void> {
    if (events.length > 0) await this.keyEvents.insertMany(keyEventDocuments(keyId, events));
  }

  async create(record: KeyRecord, actor: KeyActor = OPERATOR): Promise<void> {
    try {
      await this.keys.insertOne({
        ...record,
        emailLower: record.email.toLowerCase(),
        active: true,
      });
      await this.record(record.id, [createdEvent(record, actor)]);
    } catch (err) {
      if (
        err instanceof MongoServerError &&
        err.code === DUPLICATE_KEY &&
        'emailLower' in (err.keyValue ?? {})
      ) {
        throw new EmailTakenError(record.email);
      }
      throw err;
    }
  }

  async findByDigest(digest: string): Promise<SecretMatch | null> {
    const document = await this.keys.findOne<StoredKey>(byDigestFilter(digest), {
      projection: PROJECTION,
    });
    return document && toSecretMatch(document, digest);
  }

  async find(idOrDigest: string): Promise<KeyRecord | null> {
    return toRecord(
      await this.keys.findOne<StoredKey>(
        { $or: [{ id: idOrDigest }, { digest: idOrDigest }] },
        { projection: PROJECTION },
      ),
    );
  }

  async list(): Promise<KeyRecord[]> {
    const documents = await this.keys
      .find<StoredKey>({}, { projection: PROJECTION })
      .sort({ createdAt: 1 })
      .toArray();
    return documents.map((document) => toRecord(document)!);
  }

  async roll(
    idOrDigest: string,
    roll: KeyRoll,
    actor: KeyActor = OPERATOR,
  ): Promise<KeyRecord | null> {
    const { filter, update } = keyRollUpdate(idOrDigest, roll);
    const rolled = (await this.keys.findOneAndUpdate(filter, update, {
      returnDocument: 'after',
      projection: PROJECTION,
    })) as StoredKey | null;
    if (rolled) {
      await this.record(rolled.id, [rollEvent(roll, actor)]);
      return toRecord(rolled);
    }
    // Missed by the filter: no such key, a revoked one, or one whose current secret changed.
    const existing = await this.find(idOrDigest);
    if (existing === null) return null;
    if (existing.revokedAt !== null) throw new KeyRevokedError(existing.id);
    throw new KeyChangedError(existing.id);
  }

  async endPreviousSecret(
    id: string,
    digest: string,
    reason: EndReason,
    url: string | null,
    actor: KeyActor = OPERATOR,
  ): Promise<KeyRecord | null> {
    const ended = { digest, reason, at: new Date().toISOString(), url };
    const { filter, update } = endPreviousUpdate(id, ended);
    const record = toRecord(
      (await this.keys.findOneAndUpdate(filter, update, {
        returnDocument: 'after',
        projection: PROJECTION,
      })) as StoredKey | null,
    );
    if (record) await this.record(record.id, [leakedPreviousEvent(url, actor, ended.at)]);
    return record;
  }

  async update(id: string, patch: KeyPatch, actor: KeyActor = OPERATOR): Promise<KeyRecord | null> {
    const now = new Date().toISOString();
    const { filter, update } = keyUpdate(id, patch, now);
    const before = toRecord(
      (await this.keys.findOneAndUpdate(filter, update, {
        returnDocument: 'before',
        projection: PROJECTION,
      })) as StoredKey | null,
    );
    if (before) {
      await this.record(before.id, eventsOfPatch(before, patch, actor, now));
      return this.find(before.id);
    }
    // Missed by the filter: no such key, or a revoked one, which stays as it is.
    const existing = await this.find(id);
    if (existing !== null && patch.revokedAt === undefined) throw new KeyRevokedError(id);
    return existing;
  }

  async recordUse(uses: readonly KeyUse[]): Promise<number> {
    if (uses.length === 0) return 0;
    return (await this.keys.bulkWrite(keyUseUpdates(uses), { ordered: false })).modifiedCount;
  }

  async events(keyId: string, since: string): Promise<KeyEvent[]> {
    return this.keyEvents
      .find<KeyEvent>(
        { keyId, at: { $gte: since } },
        { projection: { _id: 0, keyId: 0, atDate: 0 }, sort: { at: -1 } },
      )
      .toArray();
  }

  async changesSince(cursor?: string): Promise<KeyChanges> {
    if (cursor === undefined || Number.isNaN(Date.parse(cursor))) {
      return { cursor: new Date().toISOString(), keyIds: [], digests: [] };
    }
    const rows = await this.keys
      .find<Pick<KeyRecord, 'id' | 'digest' | 'updatedAt'>>(keyChangesFilter(cursor), {
        projection: { _id: 0, id: 1, digest: 1, updatedAt: 1 },
      })
      .toArray();
    return newKeyChanges(cursor, rows, this.reported);
  }

  async recordEvent(keyId: string, event: KeyEvent): Promise<void> {
    await this.record(keyId, [event]);
  }

  async ping(): Promise<void> {
    await this.client.db('admin').command({ ping: 1 });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
