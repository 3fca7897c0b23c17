import { type Stats, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
/** Where `npm run build` finds its TypeScript. */
const COMPILED = ['services', 'scripts'];
/** What it copies as is (scripts/copy-assets.js). */
const COPIED = ['services/catalog/data', 'services/gateway/src/portal'];

const isCompiled = (file: string) =>
  file.endsWith('.ts') && !file.endsWith('.d.ts') && !file.endsWith('.test.ts');

/** Each source file (relative to `root`), when it last changed, and what it becomes in dist/. */
function sources(root: string, stat: (file: string) => Stats | undefined) {
  const found: { source: string; changedAt: number; built: string }[] = [];
  for (const dir of [...COMPILED, ...COPIED]) {
    const copied = COPIED.includes(dir);
    for (const entry of readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })) {
      const source = path.join(dir, entry);
      const stats = stat(source);
      if (!stats?.isFile() || !(copied || isCompiled(source))) continue;
      const built = path.join('dist', copied ? source : source.replace(/\.ts$/, '.js'));
      found.push({ source, changedAt: stats.mtimeMs, built });
    }
  }
  return found;
}

/**
 * What is wrong with dist/ under `root`, if anything. Every build rewrites all of dist/, so the
 * build is as old as the oldest file in it that a current source becomes; a source changed
 * after that, or no dist/ at all, is a stale build.
 */
export function staleBuild(root: string): string | undefined {
  const stat = (file: string) => statSync(path.join(root, file), { throwIfNoEntry: false });
  const files = sources(root, stat);
  const builtTimes = files.flatMap(({ built }) => stat(built)?.mtimeMs ?? []);
  if (builtTimes.length === 0) return 'dist/ is missing';
  const builtAt = Math.min(...builtTimes);
  const changed = files.filter(({ changedAt }) => changedAt > builtAt).map((f) => f.source);
  if (changed.length === 0) return undefined;
  const named = changed.slice(0, 5).join(', ') + (changed.length > 5 ? ', …' : '');
  return `dist/ is older than ${changed.length} source file(s): ${named}`;
}

/**
 * Tests run the services and CLIs from dist/ (as the images do), so a stale dist/ would test
 * older code, and could pass: the run stops before any test.
 */
export default function globalSetup(): void {
  const problem = staleBuild(ROOT);
  if (problem) {
    throw new Error(
      `${problem}. The tests run the built services and CLIs: run \`npm run build\` first ` +
        '(`npm test` does).',
    );
  }
}
