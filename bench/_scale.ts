import { loadTools } from '../services/catalog/src/dataset';
import { CatalogSnapshot } from '../services/catalog/src/store/catalog-snapshot';
import { loadSearchFixtures } from '../test/catalog/search-relevance';
import { syntheticCatalog } from './synthetic-catalog';
const fixtures = loadSearchFixtures();
const real = loadTools();
const res: Record<number, number> = {};
for (const n of [165, 10000]) {
  const tools = syntheticCatalog(real, n);
  let t = process.hrtime.bigint();
  const snap = CatalogSnapshot.build(tools, 1);
  console.log(n, 'build ms', Number(process.hrtime.bigint() - t) / 1e6);
  for (const f of fixtures) snap.search({ text: f.q, limit: 10, category: f.category });
  const c0 = process.cpuUsage();
  let count = 0;
  while (true) {
    for (const f of fixtures) { snap.search({ text: f.q, limit: 10, category: f.category }); count++; }
    const c = process.cpuUsage(c0);
    if (c.user + c.system > 3e6) { res[n] = (c.user + c.system) / count; break; }
  }
  console.log(n, 'µs/query', res[n]);
}
console.log('ratio', res[10000]! / res[165]!);
