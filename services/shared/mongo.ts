import { MongoClient } from 'mongodb';

/** A connected MongoDB client that fails fast (5 s) when no server can be selected. */
export async function connectMongo(uri: string, appName: string): Promise<MongoClient> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5_000, appName });
  await client.connect();
  return client;
}
