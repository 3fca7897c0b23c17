import {
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  readSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot, run } from './commands';

/** What a process that opened a file before the build reads from it after. */
function readHeld(fd: number): string {
  const buffer = Buffer.alloc(64);
  const read = readSync(fd, buffer, 0, buffer.length, 0);
  closeSync(fd);
  return buffer.subarray(0, read).toString();
}

// A build of the whole tree, on a busy machine.
jest.setTimeout(180_000);

/**
 * `npm run build` (scripts/build.js) in a copy of the tree, so the suite's own dist/ is left as
 * it is. A build may run while services and CLIs start (npx builds on its first run in a fresh
 * clone): each file of dist/ is then replaced by a whole new one, never rewritten in place, so a
 * process that opened the old file reads all of it and one that opens it later all of the new.
 */
test('a build replaces each file of dist/ whole and removes what it no longer writes; two at once both succeed', async () => {
  const tree = mkdtempSync(path.join(tmpdir(), 'td-build-'));
  for (const entry of [
    'package.json',
    'tsconfig.json',
    'tsconfig.build.json',
    'scripts',
    'services',
  ]) {
    cpSync(path.join(repoRoot, entry), path.join(tree, entry), { recursive: true });
  }
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(tree, 'node_modules'));
  const module = path.join(tree, 'dist/services/catalog/src/schemas/tool.js');
  const removed = path.join(tree, 'dist/services/catalog/src/schemas/removed.js');
  mkdirSync(path.dirname(module), { recursive: true });
  writeFileSync(module, 'the previous build');
  writeFileSync(removed, 'the output of a source since deleted');
  const longAgo = new Date(Date.now() - 3_600_000);
  utimesSync(removed, longAgo, longAgo);
  const held = openSync(module, 'r');

  // Two at once, as two first runs of npx in a fresh clone start them; at the lowest priority,
  // so that the suite beside this one keeps its CPU.
  const builds = await Promise.all(
    [0, 1].map(() =>
      run('nice', ['-n', '19', process.execPath, 'scripts/build.js'], { cwd: tree }),
    ),
  );
  for (const built of builds) expect(built).toMatchObject({ code: 0, stderr: '' });

  expect(readHeld(held)).toBe('the previous build');
  expect(readFileSync(module, 'utf8')).toContain('ToolRecord');
  expect(existsSync(removed)).toBe(false);
  expect(readdirSync(tree).filter((entry) => entry.startsWith('.dist-staging'))).toEqual([]);
});
