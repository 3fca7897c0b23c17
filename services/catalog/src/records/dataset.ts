import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { ToolRecord } from '../schemas/tool';

export interface DatasetMeta {
  version: string;
  attribution: string;
  pricingAsOf: string;
  description: string;
}

export interface Dataset {
  meta: DatasetMeta;
  tools: ToolRecord[];
}

/** The bundled dataset: `data/meta.json` and one `data/tools/<category-slug>.json` per category. */
export const DATASET_DIR = path.resolve(__dirname, '..', '..', 'data');

/** The dataset's metadata: every store's responses carry its attribution. */
export function loadDatasetMeta(dir: string = DATASET_DIR): DatasetMeta {
  return JSON.parse(readFileSync(path.join(dir, 'meta.json'), 'utf8')) as DatasetMeta;
}

/**
 * Every bundled tool: only the embedded store and `npm run seed` need them. A bundled record
 * has no `updatedAt`: the store's change clock gives it one when it seeds it.
 */
export function loadTools(dir: string = DATASET_DIR): ToolRecord[] {
  const toolsDir = path.join(dir, 'tools');
  return readdirSync(toolsDir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .flatMap((file) => JSON.parse(readFileSync(path.join(toolsDir, file), 'utf8')) as ToolRecord[]);
}

export function loadDataset(dir: string = DATASET_DIR): Dataset {
  return { meta: loadDatasetMeta(dir), tools: loadTools(dir) };
}
