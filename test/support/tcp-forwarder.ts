import { connect, createServer, type Server, type Socket } from 'node:net';
import { freePort } from './ports';

/**
 * A TCP balancer in front of several backends, standing where a Kubernetes Service or a cloud
 * load balancer stands in front of the catalog's pods. Each new connection goes to the next
 * backend in turn, or to the following one when a backend refuses; once connected it is passed
 * through byte for byte, and a backend closing the connection, or failing on it, closes the
 * client's side too. A failure closes rather than resets the client's side: with
 * `resetAndDestroy()` a request of the socket could stay pending, and Node 20 then spun at full
 * CPU in its exit cleanup, so Jest had to kill its worker ("failed to exit gracefully").
 */
export class TcpForwarder {
  private turn = 0;
  private readonly sockets = new Set<Socket>();
  /** Each connected backend and its client, while both are open. */
  private readonly pairs = new Map<Socket, Socket>();
  private holding = false;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly backends: number[],
  ) {
    server.on('connection', (client) => this.forward(client));
  }

  static async start(backends: number[]): Promise<TcpForwarder> {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return new TcpForwarder(server, port, backends);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  private forward(client: Socket): void {
    this.track(client);
    // The client's bytes wait in its socket (no reader yet) until a backend has accepted.
    client.on('error', () => undefined);
    const first = this.turn++;
    const tryBackend = (attempt: number) => {
      if (attempt === this.backends.length) {
        client.destroy();
        return;
      }
      const backend = connect(
        this.backends[(first + attempt) % this.backends.length]!,
        '127.0.0.1',
      );
      this.track(backend);
      let connected = false;
      backend.once('connect', () => {
        connected = true;
        client.pipe(backend);
        this.pairs.set(backend, client);
        backend.once('close', () => this.pairs.delete(backend));
        // A backend's FIN ends the client's side once the bytes before it are delivered.
        if (!this.holding) backend.pipe(client);
      });
      backend.on('error', () => {
        if (connected) client.destroy();
        else tryBackend(attempt + 1);
      });
      client.once('close', () => backend.destroy());
    };
    tryBackend(0);
  }

  /**
   * Stops passing what the backends send to the clients, now and on connections made meanwhile,
   * until `release`: a server that reads its requests and goes silent. What it sent meanwhile
   * waits, and is delivered on release.
   */
  holdReplies(): void {
    this.holding = true;
    for (const [backend, client] of this.pairs) {
      backend.unpipe(client);
      backend.pause();
    }
  }

  release(): void {
    this.holding = false;
    for (const [backend, client] of this.pairs) backend.pipe(client);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
