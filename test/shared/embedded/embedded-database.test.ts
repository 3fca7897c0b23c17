import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { openEmbeddedDatabase } from '../../../services/shared/embedded/embedded-database';
import { tempDataDir } from '../../support/services';

const MODULE = path.resolve(
  __dirname,
  '../../../dist/services/shared/embedded/embedded-database.js',
);
const PROCESSES = 8;
const ROUNDS = 40;
/** Time for every process of a round to start before they open the file together. */
const START_DELAY_MS = 400;

/**
 * One process that waits until `at` (busy, so it is on the CPU at that moment), opens the
 * database with a migration, and exits 0, or prints SQLite's error and exits 1.
 */
function opener(dataDir: string, at: number): Promise<{ code: number | null; output: string }> {
  const script = `
    const { openEmbeddedDatabase } = require(${JSON.stringify(MODULE)});
    while (Date.now() < ${at});
    try {
      const db = openEmbeddedDatabase(${JSON.stringify(dataDir)}, 'shared.db', [
        (db) => db.exec('CREATE TABLE items (id INTEGER PRIMARY KEY)'),
      ]);
      db.prepare('SELECT count(*) FROM items').get();
      db.close();
    } catch (err) {
      console.log(err.code, err.message);
      process.exit(1);
    }`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/**
 * Hardening: the gateways, the catalog and the CLIs of the embedded mode open the same SQLite
 * files under DATA_DIR, often at the same moment (a `helm upgrade`, `npm start`). Switching a new
 * file to WAL made SQLite answer SQLITE_BUSY at once to one of two processes doing it together,
 * and that process died at start ("database is locked"): one to three processes in this test's
 * 320 (a gateway of test/gateway/keys/key-store-race.test.ts, once). Every process must open it.
 */
describe('an embedded database opened by several processes at once', () => {
  test(`${PROCESSES} processes opening a new file together, ${ROUNDS} times: every one opens it`, async () => {
    const failures: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const dataDir = tempDataDir();
      const at = Date.now() + START_DELAY_MS;
      const results = await Promise.all(
        Array.from({ length: PROCESSES }, () => opener(dataDir, at)),
      );
      for (const { code, output } of results) {
        if (code !== 0) failures.push(`round ${round}: exit ${code}: ${output.trim()}`);
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);
});

describe('an embedded database that cannot be opened', () => {
  // A path that is a directory: refused even to root, as CI runs; a read-only or foreign-owned
  // volume gives the same SQLITE_CANTOPEN to the app user.
  test('the error names the file and what DATA_DIR must be', () => {
    const dataDir = tempDataDir();
    mkdirSync(path.join(dataDir, 'blocked.db'));
    expect(() => openEmbeddedDatabase(dataDir, 'blocked.db', [])).toThrow(
      `cannot open ${path.join(dataDir, 'blocked.db')} (unable to open database file): DATA_DIR (${dataDir}) must be a directory on a local disk that this process (uid ${process.getuid!()}) can write`,
    );
  });
});
