import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadCatalogConfig } from '../../services/catalog/src/config';

/** `SEARCH_ENGINE` (SPEC B11 on MongoDB): the catalog's setting and the seed's. */

const SEED_CLI = path.resolve(__dirname, '..', '..', 'dist/scripts/seed.js');
const TOKEN = { INTERNAL_TOKEN: 'test-internal-token-0123456789' };

async function seed(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [SEED_CLI, ...args], {
      env: { PATH: process.env.PATH, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const { code, stdout, stderr } = err as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

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

  test('the seed refuses a wrong one before connecting, and its usage tells the settings', async () => {
    const refused = await seed([], {
      MONGODB_URI: 'mongodb://127.0.0.1:1',
      SEARCH_ENGINE: 'lucene',
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('SEARCH_ENGINE');
    const { stdout } = await seed(['--help'], {});
    expect(stdout).toContain('SEARCH_ENGINE');
    expect(stdout).toContain('atlas-search-index.json');
  });
});
