import { Registry } from 'prom-client';
import { EmbeddedStore } from '../../../services/catalog/src/store/embedded-store';
import { instrumentStore } from '../../../services/catalog/src/store/instrumented-store';
import { dataset, embeddedStore } from '../../support/catalog';
import { tempDataDir } from '../../support/services';

/** A store whose connection drops after the first exported record. */
class FailingExport extends EmbeddedStore {
  override async *exportTools() {
    yield (await this.getTool(dataset.tools[0]!.slug))!;
    throw new Error('connection lost');
  }
}

async function drain<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/** The export's value of a counter, or of a histogram's `_count`. */
async function exportSample(registry: Registry, name: string): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = metric?.values as
    { labels: Record<string, unknown>; metricName?: string; value: number }[] | undefined;
  const sample = values?.find(
    (v) =>
      v.labels.operation === 'exportTools' &&
      (v.metricName === undefined || v.metricName === `${name}_count`),
  );
  return sample?.value ?? 0;
}

describe('the instrumented store times the streamed export', () => {
  test('one duration sample per export, once every record has gone', async () => {
    const registry = new Registry();
    const store = instrumentStore(embeddedStore(), registry);
    const tools = await drain(store.exportTools());
    expect(tools).toHaveLength(dataset.tools.length);
    expect(await exportSample(registry, 'catalog_store_operation_duration_seconds')).toBe(1);
    expect(await exportSample(registry, 'catalog_store_errors_total')).toBe(0);
  });

  test('a store failing mid-export is counted as an error, and the error reaches the reader', async () => {
    const registry = new Registry();
    const store = instrumentStore(new FailingExport(tempDataDir(), dataset.tools), registry);
    await expect(drain(store.exportTools())).rejects.toThrow('connection lost');
    expect(await exportSample(registry, 'catalog_store_errors_total')).toBe(1);
  });
});
