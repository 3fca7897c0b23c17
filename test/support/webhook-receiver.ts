import { randomBytes } from 'node:crypto';
import { type IncomingHttpHeaders, createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Subscription, WebhookEvent } from '../../services/catalog/src/webhooks/webhook-types';

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Date.now() when the request arrived. */
  at: number;
}

/** How the receiver answers its n-th request (1 = the first); `hang` never answers. */
export type Answer = { status: number; headers?: Record<string, string> } | 'hang';

export interface Receiver {
  url: string;
  port: number;
  requests: Received[];
  /** TCP connections accepted, requests or not. */
  connections: number;
  close(): Promise<void>;
}

/** A webhook receiver on 127.0.0.1 that records every request and answers as told. */
export async function startReceiver(
  answer: (n: number, request: Received) => Answer = () => ({ status: 200 }),
): Promise<Receiver> {
  const requests: Received[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: Received = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        at: Date.now(),
      };
      requests.push(received);
      const reply = answer(requests.length, received);
      if (reply !== 'hang') res.writeHead(reply.status, reply.headers).end('{}');
    });
  });
  server.on('connection', (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    requests,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

let sequence = 0;

export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function subscription(url: string, overrides: Partial<Subscription> = {}): Subscription {
  sequence += 1;
  return {
    id: `wh_test${sequence}_${randomBytes(4).toString('hex')}`,
    keyId: 'key_test',
    url,
    events: ['tool.created', 'tool.updated', 'tool.deleted', 'quota.warning'],
    description: null,
    secret: newSecret(),
    createdAt: new Date().toISOString(),
    disabledAt: null,
    ...overrides,
  };
}

export function toolCreated(subscriptionId: string, slug = `tool-${++sequence}`): WebhookEvent {
  return {
    id: `evt_${sequence}_${randomBytes(4).toString('hex')}_${subscriptionId}`,
    type: 'tool.created',
    timestamp: new Date().toISOString(),
    data: { slug, name: slug.toUpperCase(), tags: ['a', 'b'] },
  };
}
