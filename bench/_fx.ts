import { loadTools } from '../services/catalog/src/dataset';
import { CatalogSnapshot } from '../services/catalog/src/store/catalog-snapshot';
import { loadSearchFixtures } from "../test/catalog/search-relevance";
const fixtures = { fixtures: loadSearchFixtures() };
const tools = loadTools();
const snap = CatalogSnapshot.build(tools, 1);
let hits = 0, rr = 0, n = 0;
const only = process.argv[2];
for (const f of (fixtures as any).fixtures) {
  if (only && f.q !== only) continue;
  const { items } = snap.search({ text: f.q, limit: 5, category: f.category });
  const slugs = items.map((t) => t.slug);
  const missing = f.expectedInTop5.filter((s: string) => !slugs.includes(s));
  const first = Math.min(...f.expectedInTop5.map((s: string) => { const i = slugs.indexOf(s); return i < 0 ? 99 : i; }));
  n++; if (missing.length === 0) hits++; rr += first === 99 ? 0 : 1 / (first + 1);
  const bad = missing.length > 0 || (f.exactName && slugs[0] !== f.expectedInTop5[0]) || (f.top5Category && items.some((t) => t.category !== f.top5Category)) || (f.top5Tags && items.some((t) => !f.top5Tags.every((g: string) => t.tags.includes(g))));
  if (bad || only || (process.env.RR && first > 0)) console.log(bad ? 'FAIL' : 'rank'+(first+1), JSON.stringify(f.q), slugs.join(','), 'missing', missing.join(','), only ? items.map((t) => t.score).join(' ') : '');
}
console.log({ n, hitRate: hits / n, mrr: rr / n });
