import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export type EmbeddedDatabase = Database.Database;

/**
 * One schema step: run once per database file, in order, inside the transaction that bumps
 * `user_version`, so two processes opening a new file at once cannot both apply it.
 */
export type Migration = (db: EmbeddedDatabase) => void;

/** How long a writer waits for another process's write lock before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5_000;

/**
 * Opens (creating if needed) an SQLite database under DATA_DIR for the embedded mode's mutable
 * state. WAL lets readers in other processes go on while one process writes; every write is a
 * transaction, so a crash (kill -9 included) leaves the last committed state; `synchronous=FULL`
 * makes a commit durable before a write is answered. The file must be on a local disk: SQLite's
 * locking is not safe on NFS (docs/architecture.md).
 */
export function openEmbeddedDatabase(
  dataDir: string,
  fileName: string,
  migrations: readonly Migration[],
): EmbeddedDatabase {
  mkdirSync(dataDir, { recursive: true });
  const db = openFile(path.join(dataDir, fileName), dataDir);
  enableWal(db);
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  migrate(db, migrations);
  return db;
}

/**
 * SQLite's own "unable to open database file" names neither the file nor what an operator can
 * change (a volume mounted read-only or owned by another user, a path that is a directory).
 */
function openFile(file: string, dataDir: string): EmbeddedDatabase {
  try {
    return new Database(file, { timeout: BUSY_TIMEOUT_MS });
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'SQLITE_CANTOPEN') throw err;
    const user = process.getuid ? `uid ${process.getuid()}` : 'the user it runs as';
    throw new Error(
      `cannot open ${file} (${(err as Error).message}): DATA_DIR (${dataDir}) must be a directory on a local disk that this process (${user}) can write`,
      { cause: err },
    );
  }
}

/** Between two tries of switching a file to WAL. */
const WAL_RETRY_MS = 10;

/**
 * Switches the file to WAL, which takes an exclusive lock. Processes that open a new file at
 * once can each hold a shared lock while asking for it, and SQLite then answers one of them
 * SQLITE_BUSY at once instead of calling its busy handler (waiting could deadlock): that one
 * tries again, within the same bound as a write's wait. Once the file is WAL, this is a read.
 */
function enableWal(db: EmbeddedDatabase): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw err;
      // Synchronous, as the rest of the opening: the process is starting and serves nothing yet.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, WAL_RETRY_MS);
    }
  }
}

function migrate(db: EmbeddedDatabase, migrations: readonly Migration[]): void {
  const upgrade = db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number;
    for (const [index, step] of migrations.entries()) {
      if (index >= version) step(db);
    }
    if (version < migrations.length) db.pragma(`user_version = ${migrations.length}`);
  });
  // IMMEDIATE takes the write lock before reading the version: a second process waits, then
  // finds the schema already current.
  upgrade.immediate();
}
