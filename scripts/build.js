// Builds dist/ in place: compiles, copies the assets (copy-assets.js), then removes what this
// build did not write (the output of a source since deleted or moved). dist/ is never missing
// meanwhile: a service or CLI started during a build (npx runs the prepare script, and with it
// this build, the first time it is used in a fresh clone) still finds its files.
const { execFileSync } = require('node:child_process');
const { readdirSync, rmSync, rmdirSync, statSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const dist = path.join(root, 'dist');
// Older than this, a file was not written by this build. The margin covers file systems whose
// timestamps are coarser than the clock; a file it spares is only a stale one kept a while.
const startedMs = Date.now() - 2000;

execFileSync(
  process.execPath,
  [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')],
  { stdio: 'inherit', cwd: root },
);
require('./copy-assets.js');

/** Removes under `dir` the files older than the build, and the directories left empty. */
function prune(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      prune(file);
      if (readdirSync(file).length === 0) rmdirSync(file);
    } else if (statSync(file).mtimeMs < startedMs) {
      rmSync(file);
    }
  }
}
prune(dist);
