import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const SEED_CLI = path.resolve(__dirname, '..', '..', 'dist/scripts/seed.js');

/** Runs `npm run seed` (its built form) with only PATH and `env` set. */
async function seed(args: string[], env: Record<string, string> = {}) {
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

describe('npm run seed', () => {
  test('--help prints the usage and exits 0, without MONGODB_URI', async () => {
    const { code, stdout } = await seed(['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: npm run seed/);
    expect(stdout).toContain('MONGODB_URI');
  });

  test('without MONGODB_URI it exits 1 and says why', async () => {
    const { code, stderr } = await seed([]);
    expect(code).toBe(1);
    expect(stderr).toContain('MONGODB_URI is not set');
  });

  test('an unknown option is refused with the usage, exit 2', async () => {
    const { code, stderr } = await seed(['--force'], { MONGODB_URI: 'mongodb://127.0.0.1:1' });
    expect(code).toBe(2);
    expect(stderr).toContain('Usage: npm run seed');
  });

  test('a wrong SEARCH_ENGINE is refused before connecting; the usage tells the settings', async () => {
    const refused = await seed([], {
      MONGODB_URI: 'mongodb://127.0.0.1:1',
      SEARCH_ENGINE: 'lucene',
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('SEARCH_ENGINE');
    const { stdout } = await seed(['--help']);
    expect(stdout).toContain('SEARCH_ENGINE');
    expect(stdout).toContain('atlas-search-index.json');
  });
});
