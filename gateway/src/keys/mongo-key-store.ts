import {
  type Collection,
  type Filter,
  type UpdateFilter,
  type IndexDescription,
  type MongoClient,
  MongoServerError,
} from 'mongodb';
import { connectMongo } from '../../../services/shared/mongo';
import { EmailTakenError, KeyRevokedError, type KeyRecord, type KeyStore } from './key-store';

type KeyDocument = KeyRecord & { emailLower: string; active: boolean };

export const KEYS_COLLECTION = 'api_keys';

/** Lookups by digest and id; at most one *active* key per email, enforced by the server. */
export const KEY_INDEXES: IndexDescription[] = [
  { key: { digest: 1 }, name: 'digest_unique', unique: true },
  { key: { id: 1 }, name: 'id_unique', unique: true },
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

/** Keys in MongoDB, for production and any number of gateway replicas. */
export class MongoKeyStore implements KeyStore {
  readonly kind = 'mongodb';

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

  async ping(): Promise<void> {
    await this.client.db('admin').command({ ping: 1 });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
