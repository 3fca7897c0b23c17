import { loadCatalogConfig } from '../../services/catalog/src/config';

/**
 * `SEARCH_ENGINE` (docs/api.md#search on MongoDB), the catalog's setting (the seed's:
 * seed-cli.test.ts).
 */

const TOKEN = { INTERNAL_TOKEN: 'test-internal-token-0123456789' };

describe('SEARCH_ENGINE', () => {
  test('auto by default; atlas and text accepted', () => {
    expect(loadCatalogConfig(TOKEN).SEARCH_ENGINE).toBe('auto');
    for (const engine of ['atlas', 'text', 'auto']) {
      expect(loadCatalogConfig({ ...TOKEN, SEARCH_ENGINE: engine }).SEARCH_ENGINE).toBe(engine);
    }
  });

  test('anything else is refused at start, naming the setting', () => {
    expect(() => loadCatalogConfig({ ...TOKEN, SEARCH_ENGINE: 'lucene' })).toThrow(/SEARCH_ENGINE/);
  });
});
