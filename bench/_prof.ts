import { loadTools } from '../services/catalog/src/dataset';
import { CatalogSnapshot } from '../services/catalog/src/store/catalog-snapshot';
import { loadSearchFixtures } from '../test/catalog/search-relevance';
import { syntheticCatalog } from './synthetic-catalog';
const fixtures = loadSearchFixtures();
const n = Number(process.argv[2] ?? 10000);
const snap = CatalogSnapshot.build(syntheticCatalog(loadTools(), n), 1);
const R = n > 1000 ? 4 : 200;
for (let r = 0; r < R; r++) for (const f of fixtures) snap.search({ text: f.q, limit: 10, category: f.category });
