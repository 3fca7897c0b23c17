import { readFileSync, readdirSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';

/** How often connections and file descriptors are looked at. */
const CHECK_MS = 1_000;

/** Set on a socket once a request (its headers, whole) has arrived on it. */
const REQUEST_ARRIVED = Symbol('request arrived');
type ServerSocket = Socket & { [REQUEST_ARRIVED]?: true };

/**
 * Marks a request's connection as having sent one: its close is no silent connection's. The
 * server's 'request' event does it for every request; a request Node answers without that event
 * (an unsupported `Expect`, answered 417) is marked by its handler.
 */
export function requestArrived(socket: Socket): void {
  (socket as ServerSocket)[REQUEST_ARRIVED] = true;
}

/**
 * Whether the server closed this connection while it waited for a request: none arrived, the
 * client neither ended nor reset it, and it was not closed over an error other than Node's
 * request timeout (a malformed request is answered 400 and closed at once: it was not silent).
 */
function closedWaiting(socket: ServerSocket): boolean {
  if (socket[REQUEST_ARRIVED] || socket.readableEnded) return false;
  const code = (socket.errored as NodeJS.ErrnoException | null)?.code;
  return code === undefined || code === 'ERR_HTTP_REQUEST_TIMEOUT';
}

/**
 * Closes connections that have sent no byte within `timeoutMs` of being accepted, so that a
 * client that connects and stays silent cannot hold a socket, and a file descriptor, for ever: a
 * thousand such connections would exhaust a process's descriptors. Node closes them as well: its
 * `headersTimeout` (with `requestTimeout`) also runs from the connection's acceptance, and its
 * check answers 408 through clientErrorHandler; whichever comes first closes a connection.
 * Checked once a second, not per request: the set holds only connections accepted since that
 * have not spoken yet.
 *
 * `onClosed` is called for every connection the server closed before a request arrived on it,
 * whichever part closed it (this guard, Node's 408, a socket timeout, the shutdown's closing of
 * idle connections): counted when the socket closes, not where it is closed. The only work per
 * request is a flag on its socket.
 */
export function closeSilentConnections(
  server: Server,
  { timeoutMs, onClosed }: { timeoutMs: number; onClosed: () => void },
): void {
  const silent = new Map<Socket, number>();
  server.on('request', (request: IncomingMessage) => requestArrived(request.socket));
  server.on('connection', (socket: Socket) => {
    silent.set(socket, Date.now());
    socket.once('close', () => {
      silent.delete(socket);
      if (closedWaiting(socket)) onClosed();
    });
  });
  const timer = setInterval(() => {
    const deadline = Date.now() - timeoutMs;
    for (const [socket, acceptedAt] of silent) {
      if (socket.bytesRead > 0) silent.delete(socket);
      else if (acceptedAt <= deadline) {
        silent.delete(socket);
        socket.destroy();
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
