import { mkdirSync, readFileSync, statSync, unwatchFile, watchFile } from 'node:fs';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { EmailTakenError, type KeyRecord, type KeyStore } from './key-store';

interface KeyFile {
  version: 1;
  keys: KeyRecord[];
}

const FILE_NAME = 'api-keys.json';
const WATCH_INTERVAL_MS = 250;

/**
 * Keys in `DATA_DIR/api-keys.json`, for the embedded setup (one gateway). Every write goes to a
 * temporary file renamed over the old one, so a crash never leaves a torn file; every change
 * re-reads the file first, so the gateway and `npm run keys` do not overwrite each other.
 */
export class FileKeyStore implements KeyStore {
  readonly kind = 'file';
  private readonly file: string;
  private keys: KeyRecord[] = [];
  private byDigest = new Map<string, KeyRecord>();
  /** Which file we hold: every write renames a new file into place, so the inode changes. */
  private loadedVersion = '';
  private writes: Promise<unknown> = Promise.resolve();
  private watching = false;
  private onChange: () => void = () => undefined;

  constructor(dataDir: string) {
    mkdirSync(dataDir, { recursive: true });
    this.file = path.resolve(dataDir, FILE_NAME);
    this.reload();
  }

  /** Calls `onChange` when another process (the keys CLI) has changed the file. */
  watch(onChange: () => void): void {
    this.onChange = onChange;
    this.watching = true;
    watchFile(this.file, { interval: WATCH_INTERVAL_MS }, () => this.refresh());
  }

  private version(): string {
    const stats = statSync(this.file, { throwIfNoEntry: false });
    return stats ? `${stats.ino}:${stats.mtimeMs}` : '';
  }

  /** Loads the file again if another process replaced it, and says so. Our own writes are not news. */
  private refresh(): void {
    if (this.version() === this.loadedVersion) return;
    this.reload();
    this.onChange();
  }

  private reload(): void {
    this.loadedVersion = this.version();
    const data: KeyFile =
      this.loadedVersion === ''
        ? { version: 1, keys: [] }
        : (JSON.parse(readFileSync(this.file, 'utf8')) as KeyFile);
    this.keys = data.keys;
    this.byDigest = new Map(data.keys.map((k) => [k.digest, k]));
  }

  /** Runs one change at a time, on the file's latest content, and writes it atomically. */
  private mutate<T>(change: (keys: KeyRecord[]) => T): Promise<T> {
    const run = this.writes.then(async () => {
      this.refresh();
      const result = change(this.keys);
      const body: KeyFile = { version: 1, keys: this.keys };
      // Temporary file, fsync, rename: a crash leaves the old file or the new one, never a torn one.
      await writeFileAtomic(this.file, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600 });
      this.loadedVersion = this.version();
      this.byDigest = new Map(this.keys.map((k) => [k.digest, k]));
      return result;
    });
    this.writes = run.catch(() => undefined);
    return run;
  }

  create(record: KeyRecord): Promise<void> {
    const email = record.email.toLowerCase();
    return this.mutate((keys) => {
      if (keys.some((k) => k.revokedAt === null && k.email.toLowerCase() === email)) {
        throw new EmailTakenError(record.email);
      }
      keys.push(record);
    });
  }

  async findByDigest(digest: string): Promise<KeyRecord | null> {
    const known = this.byDigest.get(digest);
    if (known) return known;
    // Another process may have added it since the watcher last looked.
    this.refresh();
    return this.byDigest.get(digest) ?? null;
  }

  async find(idOrDigest: string): Promise<KeyRecord | null> {
    return this.keys.find((k) => k.id === idOrDigest || k.digest === idOrDigest) ?? null;
  }

  async list(): Promise<KeyRecord[]> {
    return [...this.keys];
  }

  update(
    id: string,
    patch: Partial<Pick<KeyRecord, 'tier' | 'revokedAt'>>,
  ): Promise<KeyRecord | null> {
    return this.mutate((keys) => {
      const index = keys.findIndex((k) => k.id === id);
      const current = keys[index];
      if (!current) return null;
      const updated = { ...current, ...patch, updatedAt: new Date().toISOString() };
      keys[index] = updated;
      return updated;
    });
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    if (this.watching) unwatchFile(this.file);
    await this.writes;
  }
}
