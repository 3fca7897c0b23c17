// Builds dist/ in place: compiles and copies the assets (copy-assets.js) into a staging
// directory beside dist/, moves each file into dist/ with a rename, then removes what this build
// did not write (the output of a source since deleted or moved). A service or CLI started during
// a build (npx runs the prepare script, and with it this build, the first time it is used in a
// fresh clone, while a test suite may be starting services) finds every file of dist/ whole:
// the old one or the new one, never one half written.
const { execFileSync } = require('node:child_process');
const { mkdirSync, readdirSync, renameSync, rmSync, rmdirSync, statSync } = require('node:fs');
const path = require('node:path');
const { copyAssets } = require('./copy-assets.js');

const root = path.join(__dirname, '..');
const dist = path.join(root, 'dist');
// At dist/'s depth, so that the source maps' relative paths hold once their files are moved. One
// per build: two builds at once (two first runs of npx) each move only what they wrote.
const STAGING_PREFIX = '.dist-staging-';
const staging = path.join(root, `${STAGING_PREFIX}${process.pid}`);
// Older than this, a file was not written by this build. The margin covers file systems whose
// timestamps are coarser than the clock; a file it spares is only a stale one kept a while.
const startedMs = Date.now() - 2000;

/** Whether the process of this id still runs (a build's staging directory is then in use). */
function running(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

// What a build that was killed left behind.
for (const entry of readdirSync(root)) {
  const pid = entry.startsWith(STAGING_PREFIX) ? Number(entry.slice(STAGING_PREFIX.length)) : NaN;
  if (Number.isInteger(pid) && !running(pid)) {
    rmSync(path.join(root, entry), { recursive: true, force: true });
  }
}
rmSync(staging, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [
    require.resolve('typescript/bin/tsc'),
    '-p',
    path.join(root, 'tsconfig.build.json'),
    '--outDir',
    staging,
  ],
  { stdio: 'inherit', cwd: root },
);
copyAssets(staging);

/** Moves every file under `from` to the same place under `to`, each with one rename. */
function moveFiles(from, to) {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory()) moveFiles(source, target);
    else renameSync(source, target);
  }
}
moveFiles(staging, dist);
rmSync(staging, { recursive: true, force: true });

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
