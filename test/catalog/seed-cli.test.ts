import { runCli } from '../support/services';

/** `tool-directory seed` with only PATH and `env` set. */
const seed = (args: string[], env: Record<string, string> = {}) => runCli('seed', args, env);

describe('tool-directory seed', () => {
  test('--help prints the usage and exits 0, without MONGODB_URI', async () => {
    const { code, stdout } = await seed(['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: tool-directory seed/);
    expect(stdout).toContain('MONGODB_URI');
  });

  test('without MONGODB_URI it exits 1 and says why', async () => {
    const { code, stderr } = await seed([]);
    expect(code).toBe(1);
    expect(JSON.parse(stderr)).toEqual({
      error: expect.stringContaining('MONGODB_URI is not set') as unknown,
    });
  });

  test('an unknown option is refused with the usage, exit 2', async () => {
    const { code, stderr } = await seed(['--force'], { MONGODB_URI: 'mongodb://127.0.0.1:1' });
    expect(code).toBe(2);
    expect(stderr).toContain('Usage: tool-directory seed');
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
