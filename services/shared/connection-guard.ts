import { readFileSync, readdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';

/** How often connections and file descriptors are looked at. */
const CHECK_MS = 1_000;

/**
 * Closes connections that have sent no byte within `timeoutMs` of being accepted. Node's
 * `headersTimeout` starts with the first byte of a request, so a client that connects and stays
 * silent would otherwise hold its socket, and a file descriptor, for ever: a thousand such
 * connections exhaust a process's descriptors. Once a connection has sent a byte, Node's own
 * header and request timeouts take over. Checked once a second, not per request: the set holds
 * only connections accepted since that have not spoken yet.
 */
export function closeSilentConnections(
  server: Server,
  { timeoutMs, onClosed }: { timeoutMs: number; onClosed: () => void },
): void {
  const silent = new Map<Socket, number>();
  server.on('connection', (socket: Socket) => {
    silent.set(socket, Date.now());
    socket.once('close', () => silent.delete(socket));
  });
  const timer = setInterval(() => {
    const deadline = Date.now() - timeoutMs;
    for (const [socket, acceptedAt] of silent) {
      if (socket.bytesRead > 0) silent.delete(socket);
      else if (acceptedAt <= deadline) {
        silent.delete(socket);
        socket.destroy();
        onClosed();
      }
    }
  }, CHECK_MS).unref();
  server.once('close', () => clearInterval(timer));
}

/** The share of the descriptor limit past which new connections are at risk. */
const DESCRIPTORS_WARNING_SHARE = 0.9;

/** This process's limit of open files, from /proc (Linux); undefined elsewhere or unlimited. */
function descriptorLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = Number(line?.split(/\s{2,}/)[1]);
    return Number.isFinite(soft) ? soft : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Logs when the process runs short of file descriptors: past the limit the kernel refuses new
 * connections before Node sees them (libuv accepts and closes them), so nothing else would say
 * so. Once on the way up and once on the way back; `process_open_fds` and `process_max_fds` (the
 * default metrics) carry the figures for the alert.
 */
export function watchFileDescriptors(logger: Pick<Logger, 'warn' | 'info'>): () => void {
  const limit = descriptorLimit();
  if (limit === undefined) return () => undefined;
  let short = false;
  const timer = setInterval(() => {
    let open: number;
    try {
      open = readdirSync('/proc/self/fd').length;
    } catch (err) {
      // Reading the list takes a descriptor too: none left is the answer.
      if ((err as { code?: string }).code !== 'EMFILE') return;
      open = limit;
    }
    const nowShort = open >= limit * DESCRIPTORS_WARNING_SHARE;
    if (nowShort && !short) {
      logger.warn(
        { openFileDescriptors: open, limit },
        'file descriptors nearly exhausted: new connections are refused at the limit',
      );
    } else if (!nowShort && short) {
      logger.info({ openFileDescriptors: open, limit }, 'file descriptors available again');
    }
    short = nowShort;
  }, CHECK_MS).unref();
  return () => clearInterval(timer);
}
