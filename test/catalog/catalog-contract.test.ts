import { MongoClient } from 'mongodb';
import { MongoStore } from '../../services/catalog/src/store/mongo-store';
import { CATALOG_ROUTES } from '../../services/shared/catalog-routes';
import { buildTestCatalog, dataset, embeddedStore } from '../support/catalog';
import { catalogContract } from './catalog-contract';

catalogContract('embedded', async () => embeddedStore());

const mongoUri = process.env.MONGODB_URI;
if (mongoUri) {
  // A database of its own, seeded through the same path as `npm run seed`, dropped afterwards.
  const dbName = `tool_directory_contract_${process.pid}`;
  catalogContract('MongoDB', async () => {
    const store = await MongoStore.connect(mongoUri, dbName);
    await store.seed(dataset.tools);
    return store;
  });
  afterAll(async () => {
    const client = await MongoClient.connect(mongoUri);
    await client.db(dbName).dropDatabase();
    await client.close();
  });
} else {
  console.warn(
    'MongoDB contract run NOT done: MONGODB_URI is not set. Only the embedded store was tested.',
  );
}

test('the gateway proxies every public catalog route under its own template', async () => {
  const app = await buildTestCatalog();
  for (const url of CATALOG_ROUTES) expect(app.hasRoute({ method: 'GET', url })).toBe(true);
  await app.close();
});
