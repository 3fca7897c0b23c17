// Copies the bundled dataset next to the compiled catalog, where dataset.ts looks for it.
const { cpSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
cpSync(path.join(root, 'services/catalog/data'), path.join(root, 'dist/services/catalog/data'), {
  recursive: true,
});
