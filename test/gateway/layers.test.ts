import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SOURCE = path.resolve(__dirname, '../../services/gateway/src');

/**
 * The gateway's layers, from the top: a file imports only from its own layer or below, so a
 * folder never reaches back up into what uses it (the proxy knows nothing of routes, the cache
 * nothing of the proxy). A folder holds its subfolders unless they are listed themselves.
 */
const LAYERS = [
  ['server.ts'],
  ['app.ts'],
  ['watchers.ts'],
  ['routes'],
  ['mcp'],
  ['api-reference'],
  ['guard'],
  ['plugins'],
  ['dependencies.ts'],
  ['leaks'],
  ['keys'],
  ['oauth', 'analytics'],
  ['quota'],
  ['proxy'],
  ['proxy/cache'],
  ['observability'],
  ['config.ts', 'process', 'portal'],
];

/** The layer of a file, by the longest folder or file name of LAYERS it lies in. */
function layerOf(file: string): { unit: string; rank: number } {
  let found: { unit: string; rank: number } | undefined;
  LAYERS.forEach((units, rank) => {
    for (const unit of units) {
      const inside = file === unit || file.startsWith(`${unit}/`);
      if (inside && (found === undefined || unit.length > found.unit.length)) {
        found = { unit, rank };
      }
    }
  });
  if (found === undefined) throw new Error(`${file} lies in no layer: add its folder to LAYERS`);
  return found;
}

function sourceFiles(dir = ''): string[] {
  return readdirSync(path.join(SOURCE, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(relative);
    return /\.ts$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [relative] : [];
  });
}

/** The gateway's own files a file imports (types too), as paths relative to SOURCE. */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(path.join(SOURCE, file), 'utf8'));
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => path.posix.join(path.posix.dirname(file), specifier))
    .filter((target) => !target.startsWith('..'))
    .map((target) =>
      [`${target}.ts`, `${target}/index.ts`].find((candidate) =>
        existsSync(path.join(SOURCE, candidate)),
      )!,
    )
    .filter((target) => target !== undefined);
}

describe("the gateway's layers", () => {
  const files = sourceFiles();

  test('every file lies in a layer', () => {
    expect(files.length).toBeGreaterThan(50);
    for (const file of files) expect(() => layerOf(file)).not.toThrow();
  });

  test('no file imports from a layer above its own', () => {
    const upward = files.flatMap((file) =>
      importsOf(file)
        .filter((target) => layerOf(target).rank < layerOf(file).rank)
        .map((target) => `${file} -> ${target}`),
    );
    expect(upward).toEqual([]);
  });

  test('no file imports itself through others', () => {
    const graph = new Map(files.map((file) => [file, importsOf(file)]));
    const cycles: string[] = [];
    const done = new Set<string>();
    const visit = (file: string, trail: string[]) => {
      if (trail.includes(file)) {
        cycles.push([...trail.slice(trail.indexOf(file)), file].join(' -> '));
        return;
      }
      if (done.has(file)) return;
      for (const target of graph.get(file) ?? []) visit(target, [...trail, file]);
      done.add(file);
    };
    for (const file of files) visit(file, []);
    expect(cycles).toEqual([]);
  });
});
