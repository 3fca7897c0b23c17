import {
  type Collection,
  type Document,
  type Filter,
  type UpdateFilter,
  type IndexDescription,
  type MongoClient,
  MongoServerError,
} from 'mongodb';
import { connectMongo } from '../../../services/shared/mongo';
import {
  EmailTakenError,
  type KeyChanges,
  KeyRevokedError,
  type KeyRecord,
  type KeyRoll,
  type KeyStore,
} from './key-store';

type KeyDocument = KeyRecord & { emailLower: string; active: boolean };

export const KEYS_COLLECTION = 'api_keys';

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
const DUPLICATE_KEY = 11000;

/** The update of a key: a tier is never set on a revoked key (the filter misses it). */
export function keyUpdate(
  id: string,
  patch: Partial<Pick<KeyRecord, 'tier' | 'revokedAt'>>,
  now: string,
): { filter: Filter<KeyDocument>; update: UpdateFilter<KeyDocument> } {
  const set: Partial<KeyDocument> = { ...patch, updatedAt: now };
  if (patch.revokedAt) set.active = false;
  return {
    filter: patch.tier === undefined ? { id } : { id, revokedAt: null },
    update: { $set: set },
  };
}

/** A secret's key: the current one, or the previous one while its grace lasts (`now`, ISO). */
export function byDigestFilter(digest: string, now: string): Filter<KeyDocument> {
  return { $or: [{ digest }, { previousDigest: digest, previousExpiresAt: { $gt: now } }] };
}

/**
 * A roll, in one server-side update: the current secret becomes the previous one (in the same
 * pipeline stage, `$digest` is still the current one) unless the grace ends now, and the new one
 * current; a revoked key is never rolled (the filter misses it).
 */
export function keyRollUpdate(
  idOrDigest: string,
  { digest, previousExpiresAt, now }: KeyRoll,
): { filter: Filter<KeyDocument>; update: Document[] } {
  const grace = previousExpiresAt > now;
  return {
    filter: { $or: [{ id: idOrDigest }, { digest: idOrDigest }], revokedAt: null },
    update: [
      {
        $set: {
          previousDigest: grace ? '$digest' : null,
          previousExpiresAt: grace ? previousExpiresAt : null,
          digest,
          updatedAt: now,
        },
      },
    ],
  };
}

/** A stored document as a record: documents from before rolls existed have no previous secret. */
function toRecord(document: KeyRecord | null): KeyRecord | null {
  if (document === null) return null;
  return {
    ...document,
    previousDigest: document.previousDigest ?? null,
    previousExpiresAt: document.previousExpiresAt ?? null,
  };
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
  ) {}

  static async connect(uri: string, dbName: string): Promise<MongoKeyStore> {
    const client = await connectMongo(uri, 'tool-directory-gateway');
    const keys = client.db(dbName).collection<KeyDocument>(KEYS_COLLECTION);
    await keys.createIndexes(KEY_INDEXES);
    return new MongoKeyStore(client, keys);
  }

  async create(record: KeyRecord): Promise<void> {
    try {
      await this.keys.insertOne({
        ...record,
        emailLower: record.email.toLowerCase(),
        active: true,
      });
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

  async findByDigest(digest: string): Promise<KeyRecord | null> {
    return toRecord(
      await this.keys.findOne<KeyRecord>(byDigestFilter(digest, new Date().toISOString()), {
        projection: PROJECTION,
      }),
    );
  }

  async find(idOrDigest: string): Promise<KeyRecord | null> {
    return toRecord(
      await this.keys.findOne<KeyRecord>(
        { $or: [{ id: idOrDigest }, { digest: idOrDigest }] },
        { projection: PROJECTION },
      ),
    );
  }

  async list(): Promise<KeyRecord[]> {
    const documents = await this.keys
      .find<KeyRecord>({}, { projection: PROJECTION })
      .sort({ createdAt: 1 })
      .toArray();
    return documents.map((document) => toRecord(document)!);
  }

  async roll(idOrDigest: string, roll: KeyRoll): Promise<KeyRecord | null> {
    const { filter, update } = keyRollUpdate(idOrDigest, roll);
    const rolled = (await this.keys.findOneAndUpdate(filter, update, {
      returnDocument: 'after',
      projection: PROJECTION,
    })) as KeyRecord | null;
    if (!rolled && (await this.find(idOrDigest))) throw new KeyRevokedError(idOrDigest);
    return toRecord(rolled);
  }

  async update(
    id: string,
    patch: Partial<Pick<KeyRecord, 'tier' | 'revokedAt'>>,
  ): Promise<KeyRecord | null> {
    const { filter, update } = keyUpdate(id, patch, new Date().toISOString());
    const updated = (await this.keys.findOneAndUpdate(filter, update, {
      returnDocument: 'after',
      projection: PROJECTION,
    })) as KeyRecord | null;
    if (!updated && patch.tier !== undefined && (await this.find(id))) {
      throw new KeyRevokedError(id);
    }
    return toRecord(updated);
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

  async ping(): Promise<void> {
    await this.client.db('admin').command({ ping: 1 });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
