import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A small tmpfs of the test's own: DATA_DIR on a real file system that fills up. Mounting needs
 * root (CI runs as root); where it is refused the suite fails, saying so.
 */
export function mountTmpfs(sizeKiB: number): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'td-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKiB}k`, 'tmpfs', dir]);
  } catch (err) {
    throw new Error(
      `This suite needs to mount a small tmpfs (run as root, as CI does): ${(err as Error).message}`,
      { cause: err },
    );
  }
  return dir;
}

export function unmount(dir: string): void {
  execFileSync('umount', [dir]);
  rmSync(dir, { recursive: true });
}

/** Fills the file system of `dir` to the last byte with a file that `free` removes. */
export function fill(dir: string) {
  const file = path.join(dir, 'filler');
  const chunk = Buffer.alloc(64 * 1024);
  let size = chunk.length;
  for (;;) {
    try {
      writeFileSync(file, chunk, { flag: 'a' });
    } catch {
      // Then the last bytes, in ever smaller pieces.
      if (size === 512) break;
      size /= 2;
      try {
        writeFileSync(file, chunk.subarray(0, size), { flag: 'a' });
      } catch {
        // Too big for what is left: smaller next.
      }
    }
  }
  return { free: () => rmSync(file) };
}
