import type { DestinationStream, destination } from 'pino';

/** pino's own destination (sonic-boom, a dependency of pino's): the type it returns. */
type SonicBoom = ReturnType<typeof destination>;

/**
 * Log lines kept in memory and handed to sonic-boom a batch at a time: one string of about
 * `batchBytes` per write, at the latest `flushMs` after the first line of a batch. sonic-boom
 * writes each batch to the file descriptor asynchronously and deals with partial writes and a
 * full pipe. Its own `minLength` batching measures its whole buffer again on every line, which
 * cost the gateway more than building the line (docs/performance.md#current-figures).
 */
export class LineBatch implements DestinationStream {
  private lines: string[] = [];
  private bytes = 0;

  constructor(
    private readonly destination: SonicBoom,
    private readonly batchBytes: number,
    flushMs: number,
  ) {
    setInterval(() => this.handOver(), flushMs).unref();
    // Lines still here when the process ends are written before it does.
    process.once('exit', () => this.flushSync());
  }

  write(line: string): void {
    this.lines.push(line);
    this.bytes += line.length;
    if (this.bytes >= this.batchBytes) this.handOver();
  }

  /** Writes what is kept now (pino's `logger.flush()`, and every warning). */
  flush(done?: (err?: Error) => void): void {
    this.handOver();
    if (done) this.destination.flush(done);
  }

  flushSync(): void {
    this.handOver();
    try {
      this.destination.flushSync();
    } catch {
      // A write still under way (sonic-boom refuses then): it ends on its own.
    }
  }

  private handOver(): void {
    if (this.lines.length === 0) return;
    const batch = this.lines.join('');
    this.lines = [];
    this.bytes = 0;
    this.destination.write(batch);
  }
}
