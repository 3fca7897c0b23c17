/* global process */
// The OpenAPI tools whose packages ship ES modules only (@redocly/openapi-core, and
// openapi-typescript, which loads it), run in their own Node process: Jest loads tests as
// CommonJS. Usage:
//   node openapi-tools.mjs lint <document.json> <redocly.yaml>   problems as JSON on stdout
//   node openapi-tools.mjs types <document.json> <out.ts>        TypeScript types of the document
import { readFileSync, writeFileSync } from 'node:fs';
import { lint, loadConfig } from '@redocly/openapi-core';
import openapiTS, { astToString } from 'openapi-typescript';

const [command, documentPath, target] = process.argv.slice(2);

if (command === 'lint') {
  const config = await loadConfig({ configPath: target });
  const problems = await lint({ ref: documentPath, config });
  const summary = problems.map(({ severity, ruleId, message, location }) => ({
    severity,
    ruleId,
    message,
    pointer: location[0]?.pointer,
  }));
  process.stdout.write(JSON.stringify(summary));
} else if (command === 'types') {
  const ast = await openapiTS(JSON.parse(readFileSync(documentPath, 'utf8')));
  writeFileSync(target, astToString(ast));
} else {
  throw new Error(`unknown command ${command}`);
}
