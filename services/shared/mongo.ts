import { type Document, MongoClient } from 'mongodb';

/**
 * Why the server behind a `hello` reply cannot run multi-document transactions, or undefined
 * when it can: a replica set's primary or a sharded cluster's mongos can; a standalone
 * server or a secondary cannot.
 */
export function transactionsUnsupported(hello: Document): string | undefined {
  if (hello.msg === 'isdbgrid') return undefined;
  const requirement =
    'the catalog writes each change and its outbox entry in one transaction, so MongoDB must ' +
    'be a replica set (Atlas, the MongoDB Community Operator and the Bitnami chart with ' +
    'architecture=replicaset are; a single server can run as a one-member replica set)';
  if (typeof hello.setName !== 'string') return `MongoDB is a standalone server: ${requirement}`;
  if (hello.isWritablePrimary !== true) {
    return `MongoDB answered from a member of replica set '${hello.setName}' that is not its primary: connect to the replica set, not one member`;
  }
  return undefined;
}

/**
 * A connected MongoDB client that fails fast (5 s) when no server can be selected; with
 * `transactions`, it fails at once, naming the requirement, unless the server can run them.
 */
export async function connectMongo(
  uri: string,
  appName: string,
  { transactions = false } = {},
): Promise<MongoClient> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5_000, appName });
  await client.connect();
  if (transactions) {
    const problem = transactionsUnsupported(await client.db('admin').command({ hello: 1 }));
    if (problem) {
      await client.close();
      throw new Error(problem);
    }
  }
  return client;
}
