// Copies the files tsc does not emit next to the compiled code: the bundled dataset and the
// developer portal's static page. Then makes the CLI (package.json's bin) executable, as npm
// would on install: tsc writes it without the executable bit.
const { chmodSync, cpSync } = require('node:fs');
const path = require('node:path');
const { bin } = require('../package.json');

const root = path.join(__dirname, '..');

/** Copies the assets into `outDir`, a build's counterpart of dist/. */
function copyAssets(outDir) {
  for (const dir of ['services/catalog/data', 'services/gateway/src/portal']) {
    cpSync(path.join(root, dir), path.join(outDir, dir), { recursive: true });
  }
  for (const file of Object.values(bin)) {
    chmodSync(path.join(outDir, path.relative('dist', file)), 0o755);
  }
}

module.exports = { copyAssets };
