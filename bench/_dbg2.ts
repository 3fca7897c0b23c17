import type MiniSearch from 'minisearch';
import { loadTools } from '../services/catalog/src/dataset';
import { CatalogSnapshot } from '../services/catalog/src/store/catalog-snapshot';
import { planSearch } from '../services/catalog/src/store/search/search-plan';
import { bundledSynonyms } from '../services/catalog/src/store/search/synonyms';
import { miniSearchQueries } from '../services/catalog/src/store/search/tool-index';
const snap = CatalogSnapshot.build(loadTools(), 1) as any;
const ms: MiniSearch = snap.index.index;
const plan = planSearch(process.argv[2]!, bundledSynonyms());
const q = miniSearchQueries(plan);
const slugs = process.argv.slice(3);
for (const sub of q as any[]) {
  const res = ms.search(sub);
  console.log(JSON.stringify(sub.queries), slugs.map((s) => { const r = res.find((x) => x.id === s); return `${s}=${r ? r.score.toFixed(2) + ' ' + JSON.stringify(r.match) : '-'}`; }).join('\n   '));
}
