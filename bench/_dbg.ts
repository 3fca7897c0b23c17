import { loadTools } from '../services/catalog/src/dataset';
import { CatalogSnapshot } from '../services/catalog/src/store/catalog-snapshot';
const tools = loadTools();
const snap = CatalogSnapshot.build(tools, 1);
const { items, total, facets } = snap.search({ text: process.argv[2]!, limit: Number(process.argv[3] ?? 10), category: process.argv[4] });
for (const t of items) console.log(t.score.toFixed(3).padStart(16), t.slug.padEnd(28), t.category.padEnd(30), t.tags.join(','), '|', t.description.slice(0, 80));
console.log('total', total, JSON.stringify(facets.category.slice(0, 5)));
