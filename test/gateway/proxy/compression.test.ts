import { request } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { dataset } from '../../support/catalog';
import { keysCli, registerKey, startStack, tempDataDir } from '../../support/services';

type Stack = Awaited<ReturnType<typeof startStack>>;

const ORIGIN = 'https://app.example.com';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The bytes on the wire, not decoded (fetch would decode them). */
  body: Buffer;
}

/** One GET through node:http, which leaves Content-Encoding to the caller. */
function get(url: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode!,
          headers: response.headers,
          body: Buffer.concat(chunks),
        }),
      );
      response.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

const decoded = ({ headers, body }: Answer): Buffer => {
  const encoding = headers['content-encoding'];
  if (encoding === 'gzip') return gunzipSync(body);
  if (encoding === 'br') return brotliDecompressSync(body);
  if (encoding === undefined) return body;
  throw new Error(`unexpected content-encoding ${String(encoding)}`);
};

const varyNames = (answer: Answer) =>
  String(answer.headers.vary ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase());

/** Compression at the catalog, streamed back untouched by the gateway; real processes. */
describe('compressed answers through the gateway', () => {
  const dataDir = tempDataDir();
  let stack: Stack;
  const keys: Record<'free' | 'pro' | 'enterprise', string> = { free: '', pro: '', enterprise: '' };

  beforeAll(async () => {
    stack = await startStack({ DATA_DIR: dataDir, CORS_ORIGINS: ORIGIN });
    for (const tier of ['pro', 'enterprise'] as const) {
      const created = (await keysCli(
        ['create', '--tier', tier, '--email', `${tier}-compress@example.com`, '--name', 'Zip'],
        { DATA_DIR: dataDir },
      )) as { apiKey: string };
      keys[tier] = created.apiKey;
    }
    keys.free = await registerKey(stack.gateway.url);
  });
  afterAll(() => stack.stop());

  const call = (tier: keyof typeof keys, path: string, headers: Record<string, string> = {}) =>
    get(`${stack.gateway.url}${path}`, { 'x-api-key': keys[tier], ...headers });

  test('the export comes back gzip-encoded and decodes to the identity bytes', async () => {
    const identity = await call('enterprise', '/v1/export');
    const gzip = await call('enterprise', '/v1/export', { 'accept-encoding': 'gzip' });
    expect(identity.status).toBe(200);
    expect(identity.headers['content-encoding']).toBeUndefined();
    expect(gzip.status).toBe(200);
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gzip.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(gzip.body.length).toBeLessThan(identity.body.length / 3);
    expect(decoded(gzip).equals(identity.body)).toBe(true);
    expect(varyNames(gzip)).toEqual(expect.arrayContaining(['x-api-key', 'accept-encoding']));
  });

  test('a large page is compressed by Accept-Encoding preference, with a true length', async () => {
    const path = '/v1/tools?limit=100';
    const identity = await call('pro', path);
    expect(identity.headers['content-encoding']).toBeUndefined();
    for (const [acceptEncoding, expected] of [
      ['gzip, deflate, br', 'br'],
      ['gzip', 'gzip'],
      ['br;q=0.5, gzip', 'gzip'],
      ['*', 'gzip'],
    ]) {
      // Twice: the second answer comes from the catalog's response cache.
      for (let i = 0; i < 2; i++) {
        const answer = await call('pro', path, { 'accept-encoding': acceptEncoding! });
        expect(answer.status).toBe(200);
        expect(answer.headers['content-encoding']).toBe(expected);
        expect(Number(answer.headers['content-length'])).toBe(answer.body.length);
        expect(decoded(answer).equals(identity.body)).toBe(true);
        expect(varyNames(answer)).toEqual(expect.arrayContaining(['x-api-key', 'accept-encoding']));
      }
    }
    // CORS's Vary (Origin), the guard's (x-api-key) and the catalog's, all three.
    const fromBrowser = await call('pro', path, { 'accept-encoding': 'gzip', origin: ORIGIN });
    expect(fromBrowser.headers['content-encoding']).toBe('gzip');
    expect(varyNames(fromBrowser)).toEqual(['origin', 'x-api-key', 'accept-encoding']);
    for (const acceptEncoding of ['identity', 'deflate']) {
      const answer = await call('pro', path, { 'accept-encoding': acceptEncoding });
      expect(answer.headers['content-encoding']).toBeUndefined();
      expect(answer.body.equals(identity.body)).toBe(true);
    }
  });

  test('small bodies and errors are sent as they are', async () => {
    const gzip = { 'accept-encoding': 'gzip, br' };
    const small = await call('free', `/v1/tools/${dataset.tools[0]!.slug}`, gzip);
    expect(small.status).toBe(200);
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(small.body.toString()).data.slug).toBe(dataset.tools[0]!.slug);
    for (const path of ['/v1/tools/no-such-tool', '/v1/export']) {
      const error = await call('free', path, gzip);
      expect(error.status).toBeGreaterThanOrEqual(400);
      expect(error.headers['content-encoding']).toBeUndefined();
      expect(JSON.parse(error.body.toString())).toHaveProperty('error');
    }
  });

  test('each encoding has its own ETag, and If-None-Match gives 304 per encoding', async () => {
    const path = '/v1/tools?limit=100';
    const identity = await call('pro', path);
    const etag = identity.headers.etag as string;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const tags = { gzip: etag.replace(/"$/, '-gzip"'), br: etag.replace(/"$/, '-br"') };
    for (const encoding of ['gzip', 'br'] as const) {
      const accept = { 'accept-encoding': encoding };
      const full = await call('pro', path, accept);
      expect(full.headers.etag).toBe(tags[encoding]);

      const notModified = await call('pro', path, { ...accept, 'if-none-match': tags[encoding] });
      expect(notModified.status).toBe(304);
      expect(notModified.body.length).toBe(0);
      expect(notModified.headers.etag).toBe(tags[encoding]);
      expect(notModified.headers['content-encoding']).toBeUndefined();
      expect(varyNames(notModified)).toEqual(
        expect.arrayContaining(['x-api-key', 'accept-encoding']),
      );
      // The identity ETag names other bytes: the client gets the encoded answer in full.
      const other = await call('pro', path, { ...accept, 'if-none-match': etag });
      expect(other.status).toBe(200);
      expect(other.headers.etag).toBe(tags[encoding]);
    }
    const plain = await call('pro', path, { 'if-none-match': tags.gzip });
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect((await call('pro', path, { 'if-none-match': etag })).status).toBe(304);
  });
});
