import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { staleBuild } from './global-setup';
import { tempDataDir } from './services';

/** The guard that keeps Jest off a dist/ older than the sources. */
describe('stale build check', () => {
  let root: string;
  const write = (file: string, minutesAgo: number) => {
    const full = path.join(root, file);
    mkdirSync(path.dirname(full), { recursive: true });
    writeFileSync(full, '');
    const at = new Date(Date.now() - minutesAgo * 60_000);
    utimesSync(full, at, at);
  };

  beforeEach(() => {
    root = tempDataDir();
    write('services/gateway/src/app.ts', 30);
    write('services/gateway/src/portal/index.html', 30);
    write('services/shared/tiers.ts', 30);
    write('services/catalog/data/meta.json', 30);
    write('scripts/keys.ts', 30);
    write('scripts/copy-assets.js', 5);
  });

  const build = (minutesAgo: number) => {
    for (const file of [
      'services/gateway/src/app.js',
      'services/gateway/src/portal/index.html',
      'services/shared/tiers.js',
      'services/catalog/data/meta.json',
      'scripts/keys.js',
    ])
      write(path.join('dist', file), minutesAgo);
  };

  test('a build newer than every source passes; files the build ignores do not count', () => {
    build(10);
    expect(staleBuild(root)).toBeUndefined();
  });

  test('no dist/ at all is missing', () => {
    expect(staleBuild(root)).toBe('dist/ is missing');
  });

  test.each([
    ['a TypeScript source', 'services/shared/tiers.ts'],
    ['a copied asset', 'services/catalog/data/meta.json'],
    ['a new module', 'services/gateway/src/new-module.ts'],
  ])('%s changed after the build makes it stale, by name', (_kind, file) => {
    build(10);
    write(file, 1);
    expect(staleBuild(root)).toBe(`dist/ is older than 1 source file(s): ${file}`);
  });

  test('one output left over from an older build makes the whole build that old', () => {
    build(10);
    write('dist/scripts/keys.js', 40);
    expect(staleBuild(root)).toMatch(/^dist\/ is older than 5 source file\(s\)/);
  });
});
