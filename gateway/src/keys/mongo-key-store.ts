import {
  type Collection,
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
  type KeyStore,
} from './key-store';

type KeyDocument = KeyRecord & { emailLower: string; active: boolean };

export const KEYS_COLLECTION = 'api_keys';

/** Lookups by digest and id; at most one *active* key per email, enforced by the server. */
export const KEY_INDEXES: IndexDescription[] = [
  { key: { digest: 1 }, name: 'digest_unique', unique: true },
  { key: { id: 1 }, name: 'id_unique', unique: true },
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
 * The changes of a poll not already reported by an earlier one (`reported`: digest to the
 * `updatedAt` it was reported at, kept for the overlap and updated here), and the next cursor.
 */
export function newKeyChanges(
  cursor: string,
  rows: readonly Pick<KeyRecord, 'digest' | 'updatedAt'>[],
  reported: Map<string, string>,
): { cursor: string; digests: string[] } {
  let next = cursor;
  const digests: string[] = [];
  for (const { digest, updatedAt } of rows) {
    if (updatedAt > next) next = updatedAt;
    if (reported.get(digest) === updatedAt) continue;
    reported.set(digest, updatedAt);
    digests.push(digest);
  }
  const forgetBefore = new Date(Date.parse(next) - 2 * CHANGE_LOG_OVERLAP_MS).toISOString();
  for (const [digest, updatedAt] of reported) if (updatedAt < forgetBefore) reported.delete(digest);
  return { cursor: next, digests };
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

  findByDigest(digest: string): Promise<KeyRecord | null> {
    return this.keys.findOne<KeyRecord>({ digest }, { projection: PROJECTION });
  }

  find(idOrDigest: string): Promise<KeyRecord | null> {
    return this.keys.findOne<KeyRecord>(
      { $or: [{ id: idOrDigest }, { digest: idOrDigest }] },
      { projection: PROJECTION },
    );
  }

  list(): Promise<KeyRecord[]> {
    return this.keys
      .find<KeyRecord>({}, { projection: PROJECTION })
      .sort({ createdAt: 1 })
      .toArray();
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
    return updated;
  }

  async changesSince(cursor?: string): Promise<KeyChanges> {
    if (cursor === undefined || Number.isNaN(Date.parse(cursor))) {
      return { cursor: new Date().toISOString(), digests: [] };
    }
    const rows = await this.keys
      .find<Pick<KeyRecord, 'digest' | 'updatedAt'>>(keyChangesFilter(cursor), {
        projection: { _id: 0, digest: 1, updatedAt: 1 },
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
