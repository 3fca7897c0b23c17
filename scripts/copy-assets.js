// Copies the files tsc does not emit next to the compiled code: the bundled dataset and the
// developer portal's static page.
const { cpSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
for (const dir of ['services/catalog/data', 'gateway/src/portal']) {
  cpSync(path.join(root, dir), path.join(root, 'dist', dir), { recursive: true });
}
