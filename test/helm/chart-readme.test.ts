import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { README_FILE, renderReadme, renderTable, valueRows } from '../../scripts/chart-readme';
import { chartDir } from './helm';

/** The chart README's values table is generated from values.schema.json and values.yaml. */

const schema = JSON.parse(readFileSync(path.join(chartDir, 'values.schema.json'), 'utf8')) as Parameters<
  typeof valueRows
>[0];
const values = parse(readFileSync(path.join(chartDir, 'values.yaml'), 'utf8')) as Record<string, unknown>;

test('the committed README is what npm run chart:readme generates', () => {
  const readme = readFileSync(README_FILE, 'utf8');
  expect(renderReadme(readme)).toBe(readme);
});

test('every leaf of values.yaml has a row, with its default and a description', () => {
  const rows = valueRows(schema, values);
  const keys = new Set(rows.map((r) => r.key));
  // Objects are documented whole (a row) or key by key.
  const leaves: string[] = [];
  const walk = (node: unknown, at: string): void => {
    const map = node !== null && typeof node === 'object' && !Array.isArray(node);
    if (map && Object.keys(node).length > 0 && !keys.has(at)) {
      for (const [k, v] of Object.entries(node)) walk(v, at ? `${at}.${k}` : k);
    } else {
      leaves.push(at);
    }
  };
  walk(values, '');
  expect(leaves.filter((leaf) => !keys.has(leaf))).toEqual([]);
  for (const row of rows) expect([row.key, row.description.length > 10]).toEqual([row.key, true]);
  const tag = rows.find((r) => r.key === 'gateway.image.tag');
  expect(tag?.type).toBe('string');
  expect(rows.find((r) => r.key === 'gateway.port')?.default).toBe(8080);
  expect(rows.find((r) => r.key === 'config.logLevel')?.description).toMatch(/One of `fatal`, `error`/);
  expect(renderTable(rows)).toContain('| `gateway.resources` | object | `{"requests":{"cpu":"100m","memory":"128Mi"}');
});

test('a value without a description, or not in the schema, is refused', () => {
  const bare = JSON.parse(JSON.stringify(schema)) as { properties: Record<string, { description?: string }> };
  delete bare.properties.docsBaseUrl?.description;
  expect(() => valueRows(bare as never, values)).toThrow(/docsBaseUrl has no description/);
  expect(() => valueRows(schema, { ...values, secrets: { ...(values.secrets as object), extra: 1 } })).toThrow(
    /secrets\.extra is not in the schema/,
  );
});
