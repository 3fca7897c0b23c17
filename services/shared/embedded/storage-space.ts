import { statfsSync } from 'node:fs';

/** Error codes of a write that failed for lack of space: SQLite's, and the system's. */
const NO_SPACE_CODES = new Set(['SQLITE_FULL', 'ENOSPC']);

/** Whether `err` is a write that failed because the disk (or its quota) is full. */
export function isStorageFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && NO_SPACE_CODES.has(code);
}

/** What a client is told to wait before writing again once the storage is full. */
export const STORAGE_FULL_RETRY_AFTER_S = 60;

/** Free space above what was left at the failure that counts as space returned. */
const SPACE_RETURNED_BYTES = 1024 * 1024;

/**
 * Whether writes to DATA_DIR can succeed, for readiness (writes unavailable, reads still served):
 * unavailable from a write that failed for lack of space until the free space has grown by a MiB
 * since, which needs no write to find out, so it recovers by itself when space returns.
 */
export class StorageSpace {
  /** Bytes free when a write last failed for lack of space; undefined while writes work. */
  private freeAtFailure: number | undefined;

  constructor(private readonly dataDir: string) {}

  /** A write failed for lack of space. */
  failed(): void {
    this.freeAtFailure = this.freeBytes() ?? 0;
  }

  /** Undefined while writes can succeed, else why not. */
  problem(): string | undefined {
    if (this.freeAtFailure === undefined) return undefined;
    const free = this.freeBytes();
    if (free !== undefined && free >= this.freeAtFailure + SPACE_RETURNED_BYTES) {
      this.freeAtFailure = undefined;
      return undefined;
    }
    return `the storage under DATA_DIR is full (${free ?? 'unknown'} bytes free)`;
  }

  private freeBytes(): number | undefined {
    try {
      const { bavail, bsize } = statfsSync(this.dataDir);
      return bavail * bsize;
    } catch {
      return undefined;
    }
  }
}
