import type { FastifyInstance } from 'fastify';
import { buildCatalogApp } from '../../services/catalog/src/app';
import { loadDataset } from '../../services/catalog/src/records/dataset';
import type { ToolRecord, ToolRecordInput } from '../../services/catalog/src/schemas/tool';
import type { CatalogStore } from '../../services/catalog/src/store/catalog-store';
import { EmbeddedStore } from '../../services/catalog/src/store/embedded-store';
import { INTERNAL_HEADERS } from '../../services/shared/contract';
import { type Tier } from '../../services/shared/tiers';
import { tempDataDir } from './services';

export const TEST_INTERNAL_TOKEN = 'test-internal-token-0123456789';
export const dataset = loadDataset();

/**
 * The fields of a Free record, sorted: the basic fields (docs/api.md#the-tool-record), their
 * provenance (`source`, `verifiedAt`) and `updatedAt`.
 */
export const FREE_FIELDS = [
  'category',
  'description',
  'name',
  'pricing',
  'rating',
  'slug',
  'source',
  'tags',
  'updatedAt',
  'verifiedAt',
  'website',
];

/** An embedded store of the bundled dataset in a fresh DATA_DIR. */
export function embeddedStore(dataDir: string = tempDataDir()): EmbeddedStore {
  return new EmbeddedStore(dataDir, dataset.tools);
}

/** A valid tool record that the bundled dataset does not hold. */
export function newTool(overrides: Partial<ToolRecord> = {}): ToolRecord {
  const base = structuredClone(dataset.tools[0]!);
  return { ...base, slug: 'zephyr-notes', name: 'Zephyr Notes', ...overrides };
}

/**
 * A record as an import file written before provenance existed holds it: without `source` and
 * `verifiedAt` (anything else, an export's `updatedAt` say, is kept).
 */
export function withoutProvenance<T extends ToolRecordInput>(
  record: T,
): Omit<T, 'source' | 'verifiedAt'> {
  const copy: Partial<T> = { ...record };
  delete copy.source;
  delete copy.verifiedAt;
  return copy as Omit<T, 'source' | 'verifiedAt'>;
}

export function buildTestCatalog(store: CatalogStore = embeddedStore()): Promise<FastifyInstance> {
  return buildCatalogApp({
    store,
    meta: dataset.meta,
    internalToken: TEST_INTERNAL_TOKEN,
    logger: false,
  });
}

/** Headers the gateway would send for a caller of this tier. */
export function asTier(tier: Tier): Record<string, string> {
  return {
    [INTERNAL_HEADERS.token]: TEST_INTERNAL_TOKEN,
    [INTERNAL_HEADERS.tier]: tier,
    [INTERNAL_HEADERS.keyId]: `key-${tier}`,
  };
}
