import type { Collection, Db, Filter, IndexDescription, UpdateFilter } from 'mongodb';
import {
  AlreadyConsumedError,
  type OAuthRecord,
  type OAuthRefs,
  type OAuthStore,
} from './oauth-store';

export const OAUTH_COLLECTION = 'oauth_records';

export interface OAuthDocument {
  _id: string;
  model: string;
  id: string;
  payload: Record<string, unknown>;
  grantId?: string;
  uid?: string;
  userCode?: string;
  /** MongoDB's TTL monitor deletes the document after it; absent: kept until destroyed. */
  expiresAt?: Date;
  consumedAt?: Date;
  createdAt: Date;
}

export const OAUTH_INDEXES: IndexDescription[] = [
  { key: { expiresAt: 1 }, name: 'expiry_ttl', expireAfterSeconds: 0 },
  { key: { grantId: 1 }, name: 'grant', sparse: true },
  { key: { model: 1, uid: 1 }, name: 'uid', sparse: true },
  { key: { model: 1, userCode: 1 }, name: 'user_code', sparse: true },
  { key: { model: 1, createdAt: 1 }, name: 'model_created' },
];

export function documentId(model: string, id: string): string {
  return `${model}:${id}`;
}

/** A record not yet expired (the TTL monitor runs once a minute: the query checks too). */
export function liveFilter(filter: Filter<OAuthDocument>, now: Date): Filter<OAuthDocument> {
  return { ...filter, $or: [{ expiresAt: { $exists: false } }, { expiresAt: { $gt: now } }] };
}

export function upsertDocument(
  model: string,
  id: string,
  payload: Record<string, unknown>,
  expiresAt: number | null,
  refs: OAuthRefs,
  now: Date,
): UpdateFilter<OAuthDocument> {
  const set: Partial<OAuthDocument> = { model, id, payload };
  const unset: Record<string, ''> = {};
  for (const name of ['grantId', 'uid', 'userCode'] as const) {
    if (refs[name] === undefined) unset[name] = '';
    else set[name] = refs[name];
  }
  if (expiresAt === null) unset.expiresAt = '';
  else set.expiresAt = new Date(expiresAt);
  return {
    $set: set,
    ...(Object.keys(unset).length > 0 && { $unset: unset }),
    $setOnInsert: { createdAt: now },
  };
}

/** Sets the consumption once: a record already consumed does not match. */
export function consumeFilter(model: string, id: string): Filter<OAuthDocument> {
  return { _id: documentId(model, id), consumedAt: { $exists: false } };
}

export function asRecord(document: OAuthDocument | null): OAuthRecord | null {
  if (document === null) return null;
  const payload = { ...document.payload };
  if (document.consumedAt) payload.consumed = Math.floor(document.consumedAt.getTime() / 1000);
  return { id: document.id, payload };
}

/** The authorization server's records in the key store's MongoDB database. */
export class MongoOAuthStore implements OAuthStore {
  private constructor(private readonly records: Collection<OAuthDocument>) {}

  static async open(db: Db): Promise<MongoOAuthStore> {
    const records = db.collection<OAuthDocument>(OAUTH_COLLECTION);
    await records.createIndexes(OAUTH_INDEXES);
    return new MongoOAuthStore(records);
  }

  async upsert(
    model: string,
    id: string,
    payload: Record<string, unknown>,
    expiresAt: number | null,
    refs: OAuthRefs,
  ): Promise<void> {
    const update = upsertDocument(model, id, payload, expiresAt, refs, new Date());
    await this.records.updateOne({ _id: documentId(model, id) }, update, { upsert: true });
  }

  async find(model: string, id: string): Promise<OAuthRecord | null> {
    return asRecord(
      await this.records.findOne(liveFilter({ _id: documentId(model, id) }, new Date())),
    );
  }

  async findBy(model: string, ref: 'uid' | 'userCode', value: string) {
    return asRecord(await this.records.findOne(liveFilter({ model, [ref]: value }, new Date())));
  }

  async consume(model: string, id: string): Promise<void> {
    const result = await this.records.updateOne(consumeFilter(model, id), {
      $set: { consumedAt: new Date() },
    });
    if (result.modifiedCount === 0)
      throw new AlreadyConsumedError(`${model} ${id} was already used`);
  }

  async destroy(model: string, id: string): Promise<void> {
    await this.records.deleteOne({ _id: documentId(model, id) });
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.records.deleteMany({ grantId });
  }

  async all(model: string): Promise<OAuthRecord[]> {
    const documents = await this.records
      .find(liveFilter({ model }, new Date()))
      .sort({ createdAt: 1, id: 1 })
      .toArray();
    return documents.map((document) => asRecord(document)!);
  }
}
