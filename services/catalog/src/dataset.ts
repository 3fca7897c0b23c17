import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Tool } from './schemas/tool';

export interface DatasetMeta {
  version: string;
  attribution: string;
  pricingAsOf: string;
  description: string;
}

export interface Dataset {
  meta: DatasetMeta;
  tools: Tool[];
}

/** The bundled dataset: `data/meta.json` and one `data/tools/<category-slug>.json` per category. */
export const DATASET_DIR = path.resolve(__dirname, '..', 'data');

export function loadDataset(dir: string = DATASET_DIR): Dataset {
  const meta = JSON.parse(readFileSync(path.join(dir, 'meta.json'), 'utf8')) as DatasetMeta;
  const toolsDir = path.join(dir, 'tools');
  const tools = readdirSync(toolsDir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .flatMap((file) => JSON.parse(readFileSync(path.join(toolsDir, file), 'utf8')) as Tool[]);
  return { meta, tools };
}
