import { Counter, Histogram, type Registry } from 'prom-client';
import { LATENCY_BUCKETS } from '../../../shared/metrics';
import type { CatalogStore } from './catalog-store';

type Operation =
  | 'listTools'
  | 'getTool'
  | 'listCategories'
  | 'search'
  | 'exportTools'
  | 'upsert'
  | 'delete'
  | 'seed'
  | 'changesSince'
  | 'changeLog'
  | 'pruneChanges'
  | 'toolHistory'
  | 'refresh';

/**
 * Wraps a store so that every operation is timed and every failure counted, by store kind
 * (`catalog_store_operation_duration_seconds`, `catalog_store_errors_total`, and
 * `catalog_search_duration_seconds` for full-text search).
 */
export function instrumentStore(store: CatalogStore, registry: Registry): CatalogStore {
  const duration = new Histogram({
    name: 'catalog_store_operation_duration_seconds',
    help: 'Time of catalog store operations, by store and operation',
    labelNames: ['store', 'operation'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const errors = new Counter({
    name: 'catalog_store_errors_total',
    help: 'Failed catalog store operations, by store and operation',
    labelNames: ['store', 'operation'] as const,
    registers: [registry],
  });
  const searchDuration = new Histogram({
    name: 'catalog_search_duration_seconds',
    help: 'Time of full-text searches, by store',
    labelNames: ['store'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });

  async function timed<T>(operation: Operation, run: () => Promise<T>): Promise<T> {
    const end = duration.startTimer({ store: store.kind, operation });
    try {
      return await run();
    } catch (err) {
      errors.labels(store.kind, operation).inc();
      throw err;
    } finally {
      end();
    }
  }

  /** A streamed operation is timed from its first read to its last record. */
  async function* timedStream<T>(operation: Operation, source: AsyncIterable<T>) {
    const end = duration.startTimer({ store: store.kind, operation });
    try {
      yield* source;
    } catch (err) {
      errors.labels(store.kind, operation).inc();
      throw err;
    } finally {
      end();
    }
  }

  return {
    kind: store.kind,
    get version() {
      return store.version;
    },
    get searchEngine() {
      return store.searchEngine;
    },
    refresh: () => timed('refresh', () => store.refresh()),
    upsert: (tools) => timed('upsert', () => store.upsert(tools)),
    delete: (slug) => timed('delete', () => store.delete(slug)),
    seed: (tools) => timed('seed', () => store.seed(tools)),
    changesSince: (version, limit) =>
      timed('changesSince', () => store.changesSince(version, limit)),
    changeLog: (query) => timed('changeLog', () => store.changeLog(query)),
    pruneChanges: (keptFrom) => timed('pruneChanges', () => store.pruneChanges(keptFrom)),
    toolHistory: (slug) => timed('toolHistory', () => store.toolHistory(slug)),
    listTools: (query) => timed('listTools', () => store.listTools(query)),
    getTool: (slug) => timed('getTool', () => store.getTool(slug)),
    listCategories: () => timed('listCategories', () => store.listCategories()),
    search: (request) => {
      const end = searchDuration.startTimer({ store: store.kind });
      return timed('search', () => store.search(request)).finally(end);
    },
    exportTools: () => timedStream('exportTools', store.exportTools()),
    ping: () => store.ping(),
    close: () => store.close(),
  };
}
