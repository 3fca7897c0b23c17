import { type AddressInfo, type Server, type Socket, createServer } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { USER_AGENT, deliverOnce } from '../../../services/catalog/src/webhooks/deliver';
import { eventBody } from '../../../services/catalog/src/webhooks/signature';
import { checkWebhookUrl } from '../../../services/catalog/src/webhooks/ssrf-guard';
import {
  type Receiver,
  startReceiver,
  subscription,
  toolCreated,
} from '../../support/webhook-receiver';

const local = { timeoutMs: 5_000, allowPrivate: true };
const receivers: Receiver[] = [];

async function receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
  const started = await startReceiver(...args);
  receivers.push(started);
  return started;
}

afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

describe('one webhook delivery attempt (docs/api.md#webhook-events-and-deliveries)', () => {
  test('a 2xx is a success: a signed JSON POST with the Standard Webhooks headers', async () => {
    const target = await receiver(() => ({ status: 204 }));
    const sub = subscription(target.url);
    const event = toolCreated(sub.id);
    const before = Math.floor(Date.now() / 1000);

    expect(await deliverOnce(sub, event, local)).toEqual({ outcome: 'delivered', statusCode: 204 });

    expect(target.requests).toHaveLength(1);
    const [request] = target.requests;
    expect(request!.method).toBe('POST');
    expect(request!.url).toBe('/hooks');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['user-agent']).toBe(USER_AGENT);
    expect(request!.headers['webhook-id']).toBe(event.id);
    expect(Number(request!.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(before);
    expect(request!.body).toBe(eventBody(event));
    const headers = request!.headers as Record<string, string>;
    expect(new Webhook(sub.secret).verify(request!.body, headers)).toEqual({
      type: event.type,
      timestamp: event.timestamp,
      data: event.data,
    });
  });

  test('a 500 is a failure to retry, with its status code', async () => {
    const target = await receiver(() => ({ status: 500 }));
    const sub = subscription(target.url);
    expect(await deliverOnce(sub, toolCreated(sub.id), local)).toEqual({
      outcome: 'failed',
      statusCode: 500,
      error: null,
      retryAfterMs: null,
    });
  });

  test('a redirect is not followed: a failure, and its target gets no request', async () => {
    const target = await receiver();
    const redirecting = await receiver(() => ({
      status: 307,
      headers: { location: target.url },
    }));
    const sub = subscription(redirecting.url);
    expect(await deliverOnce(sub, toolCreated(sub.id), local)).toMatchObject({
      outcome: 'failed',
      statusCode: 307,
      error: 'Redirect not followed',
    });
    expect(redirecting.requests).toHaveLength(1);
    expect(target.connections).toBe(0);
  });

  test('410 Gone asks for the subscription to be disabled', async () => {
    const target = await receiver(() => ({ status: 410 }));
    const sub = subscription(target.url);
    expect(await deliverOnce(sub, toolCreated(sub.id), local)).toEqual({
      outcome: 'gone',
      statusCode: 410,
    });
  });

  test('Retry-After on 429 and 503, in seconds or as a date, says when to try again', async () => {
    const inAMinute = new Date(Date.now() + 60_000).toUTCString();
    const answers = [
      { status: 429, headers: { 'retry-after': '7' } },
      { status: 503, headers: { 'retry-after': inAMinute } },
      // Only 429 and 503 carry a meaningful Retry-After.
      { status: 500, headers: { 'retry-after': '7' } },
    ];
    const target = await receiver((n) => answers[n - 1]!);
    const sub = subscription(target.url);
    const first = await deliverOnce(sub, toolCreated(sub.id), local);
    expect(first).toMatchObject({ outcome: 'failed', statusCode: 429, retryAfterMs: 7_000 });
    const second = await deliverOnce(sub, toolCreated(sub.id), local);
    expect(second).toMatchObject({ outcome: 'failed', statusCode: 503 });
    const dated = (second as { retryAfterMs: number }).retryAfterMs;
    expect(dated).toBeGreaterThan(50_000);
    expect(dated).toBeLessThanOrEqual(60_000);
    const third = await deliverOnce(sub, toolCreated(sub.id), local);
    expect(third).toMatchObject({ outcome: 'failed', statusCode: 500, retryAfterMs: null });
  });

  test('no answer within the time limit is a failure', async () => {
    const target = await receiver(() => 'hang');
    const sub = subscription(target.url);
    const result = await deliverOnce(sub, toolCreated(sub.id), { ...local, timeoutMs: 300 });
    expect(result).toEqual({
      outcome: 'failed',
      statusCode: null,
      error: 'No answer within 300 ms',
      retryAfterMs: null,
    });
    expect(target.requests).toHaveLength(1);
  });

  test('a refused connection is a failure with the reason', async () => {
    const closed = await receiver();
    await closed.close();
    const sub = subscription(closed.url);
    expect(await deliverOnce(sub, toolCreated(sub.id), local)).toMatchObject({
      outcome: 'failed',
      statusCode: null,
      error: expect.stringContaining('ECONNREFUSED'),
    });
  });

  test('the connection goes to the address the check resolved, not to a second lookup', async () => {
    const target = await receiver();
    // `.invalid` never resolves in DNS (RFC 2606): only the injected resolver knows it.
    const sub = subscription(`http://receiver.invalid:${target.port}/hooks`);
    const resolve = jest.fn(async () => ['127.0.0.1']);
    const result = await deliverOnce(sub, toolCreated(sub.id), { ...local, resolve });
    expect(result).toEqual({ outcome: 'delivered', statusCode: 200 });
    expect(resolve).toHaveBeenCalledWith('receiver.invalid');
    expect(target.requests[0]!.headers.host).toBe(`receiver.invalid:${target.port}`);
  });
});

describe('DNS rebinding: public when subscribing, loopback when delivering', () => {
  let server: Server;
  let port: number;
  let connections = 0;

  beforeAll(async () => {
    // Any TCP connection counts: the URL is https, so no HTTP request would be understood.
    server = createServer((socket: Socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    connections = 0;
  });

  function rebinding() {
    const answers = [['93.184.215.14'], ['127.0.0.1']];
    return jest.fn(async () => answers.shift() ?? ['127.0.0.1']);
  }

  test('the attempt is refused and no connection is made', async () => {
    const url = `https://hooks.example.test:${port}/hooks`;
    const resolve = rebinding();
    await expect(checkWebhookUrl(url, { allowPrivate: false, resolve })).resolves.toMatchObject({
      addresses: ['93.184.215.14'],
    });
    const sub = subscription(url);
    const result = await deliverOnce(sub, toolCreated(sub.id), {
      timeoutMs: 2_000,
      allowPrivate: false,
      resolve,
    });
    expect(result).toMatchObject({
      outcome: 'failed',
      statusCode: null,
      error: expect.stringMatching(/^Refused: .*127\.0\.0\.1 is a loopback address/),
    });
    expect(connections).toBe(0);
  });

  test('(the same resolver with private addresses allowed does reach the listener)', async () => {
    const sub = subscription(`https://hooks.example.test:${port}/hooks`);
    const resolve = rebinding();
    await resolve();
    const result = await deliverOnce(sub, toolCreated(sub.id), {
      timeoutMs: 2_000,
      allowPrivate: true,
      resolve,
    });
    expect(result).toMatchObject({ outcome: 'failed', statusCode: null });
    expect(connections).toBe(1);
  });
});
