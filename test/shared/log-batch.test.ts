import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { LineBatch } from '../../services/shared/log-batch';
import { waitFor } from '../support/ports';
import { within } from '../support/waits';

const LOGGER = path.resolve(__dirname, '../../dist/services/shared/logger.js');

/** A real sonic-boom destination on a temporary file, and what the file holds. */
function fileDestination() {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'log-batch-')), 'out.log');
  const destination = pino.destination({ dest: file, sync: true });
  const writes: string[] = [];
  const write = destination.write.bind(destination);
  destination.write = (chunk: string) => {
    writes.push(chunk);
    return write(chunk);
  };
  return { destination, writes, contents: () => readFileSync(file, 'utf8') };
}

describe('log lines batched in memory', () => {
  it('hands lines over one batch at a time, in order, once the batch is full', () => {
    const { destination, writes, contents } = fileDestination();
    const batch = new LineBatch(destination, 30, 60_000);
    batch.write('{"n":1}\n');
    batch.write('{"n":2}\n');
    batch.write('{"n":3}\n');
    expect(writes).toEqual([]);
    batch.write('{"n":4}\n');
    expect(writes).toEqual(['{"n":1}\n{"n":2}\n{"n":3}\n{"n":4}\n']);
    batch.write('{"n":5}\n');
    batch.flush();
    expect(writes).toHaveLength(2);
    expect(contents()).toBe('{"n":1}\n{"n":2}\n{"n":3}\n{"n":4}\n{"n":5}\n');
  });

  it('writes a batch that is not full after the flush interval', async () => {
    const { destination, contents } = fileDestination();
    const flushMs = 50;
    const batch = new LineBatch(destination, 16_384, flushMs);
    batch.write('{"late":true}\n');
    expect(contents()).toBe('');
    await waitFor(async () => (contents() === '{"late":true}\n' ? true : undefined), {
      what: 'the batch written',
      timeoutMs: within(flushMs),
    });
  });

  it("calls pino's flush callback once what was kept is written", async () => {
    const { destination, contents } = fileDestination();
    const batch = new LineBatch(destination, 16_384, 60_000);
    batch.write('{"n":1}\n');
    await new Promise<void>((resolve, reject) =>
      batch.flush((err) => (err ? reject(err) : resolve())),
    );
    expect(contents()).toBe('{"n":1}\n');
  });

  it("a service's logger writes a warning at once, and every kept line by the time it exits", () => {
    // The child logs info lines (kept), a warning (written at once, after them), more info
    // lines, and exits at once: nothing may be missing or out of order on its stdout.
    const script = `
      const { createLogger } = require(${JSON.stringify(LOGGER)});
      const log = createLogger({ service: 'test', level: 'info', pretty: false });
      for (let i = 0; i < 3; i++) log.info({ i }, 'before');
      log.warn('warning');
      for (let i = 0; i < 500; i++) log.info({ i }, 'after');
      process.exit(0);
    `;
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(child.status).toBe(0);
    const lines = child.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { msg: string; i?: number; level: string });
    expect(lines.map((l) => l.msg)).toEqual([
      ...Array<string>(3).fill('before'),
      'warning',
      ...Array<string>(500).fill('after'),
    ]);
    expect(lines.filter((l) => l.msg === 'after').map((l) => l.i)).toEqual(
      Array.from({ length: 500 }, (_, i) => i),
    );
    expect(lines[3]!.level).toBe('warn');
  });
});
