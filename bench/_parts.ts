import { loadTools } from '../services/catalog/src/dataset';
import { CatalogSnapshot } from '../services/catalog/src/store/catalog-snapshot';
import { planSearch } from '../services/catalog/src/store/search/search-plan';
import { bundledSynonyms } from '../services/catalog/src/store/search/synonyms';
import { miniSearchQueries } from '../services/catalog/src/store/search/tool-index';
import { loadSearchFixtures } from '../test/catalog/search-relevance';
import { syntheticCatalog } from './synthetic-catalog';
const fixtures = loadSearchFixtures();
const snap = CatalogSnapshot.build(syntheticCatalog(loadTools(), 10000), 1) as any;
const ms = snap.index.index;
const times = new Map<string, number>(); const hits = new Map<string, number>();
for (let r = 0; r < 3; r++) for (const f of fixtures) {
  const plan = planSearch(f.q, bundledSynonyms());
  for (const part of miniSearchQueries(plan)) {
    const key = JSON.stringify(part.fields) + (part.prefix ? 'P' : '') + (typeof part.fuzzy === 'function' ? 'F' : '');
    const t = process.hrtime.bigint();
    const res = ms.search(part);
    times.set(key, (times.get(key) ?? 0) + Number(process.hrtime.bigint() - t) / 1e6);
    hits.set(key, (hits.get(key) ?? 0) + res.length);
  }
}
for (const [k, v] of times) console.log(k.padEnd(80), (v / 3 / fixtures.length).toFixed(3), 'ms/query', (hits.get(k)! / 3 / fixtures.length).toFixed(0), 'hits');
