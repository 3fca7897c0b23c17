import Database from 'better-sqlite3';
import { connect } from 'node:net';
import path from 'node:path';
import { inProcessGateway } from '../../support/gateway';
import { waitFor } from '../../support/ports';
import { tempDataDir } from '../../support/services';

type Gateway = Awaited<ReturnType<typeof inProcessGateway>>;

/** docs/api.md#api-keys-and-registration: `POST /v1/register`. */
describe('registration', () => {
  let gateway: Gateway;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = tempDataDir();
    gateway = await inProcessGateway({
      DATA_DIR: dataDir,
      REGISTRATIONS_PER_HOUR: '1000',
      CATALOG_URL: 'http://127.0.0.1:9',
    });
  });
  afterAll(() => gateway.close());

  const register = (payload: unknown, headers: Record<string, string> = {}) =>
    gateway.app.inject({
      method: 'POST',
      url: '/v1/register',
      headers: { 'content-type': 'application/json', ...headers },
      payload:
        typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload),
    });

  test('201 with the key shown once, Free tier and daily limit; unknown fields ignored', async () => {
    const response = await register({
      email: 'Ada@Example.com',
      name: '  Ada  ',
      useCase: 'research',
      admin: true,
    });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual([
      'apiKey',
      'createdAt',
      'dailyLimit',
      'email',
      'name',
      'tier',
    ]);
    expect(body).toMatchObject({
      tier: 'free',
      dailyLimit: 100,
      email: 'Ada@Example.com',
      name: 'Ada',
    });
    expect(new Date(body.createdAt).toISOString()).toBe(body.createdAt);
    const db = new Database(path.join(dataDir, 'keys.db'), { readonly: true });
    const stored = JSON.stringify(db.prepare('SELECT * FROM api_keys').all());
    db.close();
    expect(stored).not.toContain(body.apiKey);
    expect(stored).not.toContain('"admin"');
  });

  test('409 for an email already holding an active key, whatever its case', async () => {
    await register({ email: 'grace@example.com', name: 'Grace' });
    const again = await register({ email: 'GRACE@example.com', name: 'Grace again' });
    expect(again.statusCode).toBe(409);
    expect(again.json().error).toContain('GRACE@example.com');
  });

  test.each([
    ['a missing email', { name: 'x' }, 'email'],
    ['an invalid email', { email: 'not-an-email', name: 'x' }, 'email'],
    ['an email over 254 characters', { email: `${'a'.repeat(250)}@ex.com`, name: 'x' }, 'email'],
    ['a missing name', { email: 'n1@example.com' }, 'name'],
    ['a blank name', { email: 'n2@example.com', name: '   ' }, 'name'],
    ['a name over 100 characters', { email: 'n3@example.com', name: 'x'.repeat(101) }, 'name'],
    [
      'a useCase over 1,000 characters',
      { email: 'n4@example.com', name: 'x', useCase: 'u'.repeat(1001) },
      'useCase',
    ],
    ['a JSON array', [], 'body'],
    ['a name that is a number', { email: 'n7@example.com', name: 5 }, 'name'],
    ['a useCase that is a number', { email: 'n8@example.com', name: 'x', useCase: 5 }, 'useCase'],
    ['a name with a NUL character', { email: 'n9@example.com', name: 'Ada\u0000x' }, 'name'],
    ['a name with a line break', { email: 'n10@example.com', name: 'Ada\nAdmin' }, 'name'],
    ['a name with an escape character', { email: 'n11@example.com', name: '\u001b[31mA' }, 'name'],
    ['a name with a lone surrogate', { email: 'n12@example.com', name: 'Ada\ud800' }, 'name'],
    [
      'a useCase with a lone surrogate',
      { email: 'n13@example.com', name: 'x', useCase: 'a\udc00b' },
      'useCase',
    ],
    [
      'a useCase with a NUL',
      { email: 'n14@example.com', name: 'x', useCase: 'a\u0000' },
      'useCase',
    ],
    ['a name of a zero-width space only', { email: 'n20@example.com', name: '\u200b' }, 'name'],
    [
      'a name with a right-to-left override',
      { email: 'n21@example.com', name: 'Ad\u202ea' },
      'name',
    ],
    ['a name with a line separator', { email: 'n22@example.com', name: 'Ada\u2028Admin' }, 'name'],
    ['a name with a soft hyphen', { email: 'n23@example.com', name: 'Ada\u00adLove' }, 'name'],
    ['a name with a byte order mark', { email: 'n24@example.com', name: 'Ada\ufeffLove' }, 'name'],
    [
      'a useCase with a right-to-left override',
      { email: 'n25@example.com', name: 'x', useCase: 'research \u202etxt.exe' },
      'useCase',
    ],
    [
      'a useCase with a paragraph separator',
      { email: 'n26@example.com', name: 'x', useCase: 'one\u2029two' },
      'useCase',
    ],
  ])('400 for %s, naming the field', async (_case, payload, field) => {
    const response = await register(payload);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toContain(field);
  });

  test('the message of a refused name says which characters are refused', async () => {
    const response = await register({ email: 'n15@example.com', name: 'Ada\u0007' });
    expect(response.json()).toEqual({
      error:
        "Invalid field 'name': must be a string of 1 to 100 characters after trimming, without control characters, invisible formatting characters (zero-width, bidi, BOM), Unicode line separators or invalid Unicode",
    });
  });

  test('a name of invisible characters only is refused in the words of every refused name', async () => {
    const response = await register({ email: 'n27@example.com', name: '\u200b\u200b' });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error:
        "Invalid field 'name': must be a string of 1 to 100 characters after trimming, without control characters, invisible formatting characters (zero-width, bidi, BOM), Unicode line separators or invalid Unicode",
    });
  });

  test('name and useCase are stored and answered in NFC: an accent sent apart is composed', async () => {
    const response = await register({
      email: 'nfc@example.com',
      name: 'Rene\u0301e',
      useCase: 'cafe\u0301 menus',
    });
    expect(response.statusCode).toBe(201);
    expect(response.json().name).toBe('Ren\u00e9e');
    const db = new Database(path.join(dataDir, 'keys.db'), { readonly: true });
    const stored = db
      .prepare('SELECT name, use_case AS useCase FROM api_keys WHERE email = ?')
      .get('nfc@example.com');
    db.close();
    expect(stored).toEqual({ name: 'Ren\u00e9e', useCase: 'caf\u00e9 menus' });
  });

  test('a body that is not valid UTF-8 is a 400 saying so; nothing is stored', async () => {
    const json = (bytes: number[]) =>
      Buffer.concat([
        Buffer.from('{"email":"utf8@example.com","name":"Ada'),
        Buffer.from(bytes),
        Buffer.from('"}'),
      ]);
    // A stray byte, a truncated sequence, an overlong "/", an encoded surrogate.
    for (const bytes of [[0xff], [0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80]]) {
      const response = await register(json(bytes));
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ error: 'The request body is not valid UTF-8' });
    }
    const db = new Database(path.join(dataDir, 'keys.db'), { readonly: true });
    const stored = db
      .prepare('SELECT count(*) AS n FROM api_keys WHERE email = ?')
      .get('utf8@example.com');
    db.close();
    expect(stored).toEqual({ n: 0 });
    // The same body in UTF-8 is accepted, multi-byte characters and all.
    const valid = await register(json([0xc3, 0xa9]));
    expect(valid.statusCode).toBe(201);
    expect(valid.json().name).toBe('Ada\u00e9');
  });

  test('names and use cases in any script, with emoji, and use cases of several lines are accepted', async () => {
    const response = await register({
      email: 'n16@example.com',
      name: 'Zoë 李 😀',
      useCase: 'line one\n\tline two\r\n',
    });
    expect(response.statusCode).toBe(201);
    expect(response.json().name).toBe('Zoë 李 😀');
  });

  test('a __proto__ key is an unknown field: ignored, the key issued, no prototype changed', async () => {
    const response = await register(
      '{"email":"proto@example.com","name":"Proto","__proto__":{"tier":"enterprise","polluted":1}}',
    );
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({ tier: 'free', name: 'Proto' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const nested = await register(
      '{"email":"proto2@example.com","name":"Proto","useCase":"x","constructor":{"prototype":{"a":1}}}',
    );
    expect(nested.statusCode).toBe(201);
  });

  test('the name is bounded after trimming: 100 characters between spaces are accepted', async () => {
    const name = 'n'.repeat(100);
    const accepted = await register({ email: 'n5@example.com', name: `  ${name} ` });
    expect(accepted.statusCode).toBe(201);
    expect(accepted.json().name).toBe(name);
    const blank = await register({ email: 'n6@example.com', name: ' \t ' });
    expect(blank.json()).toEqual({
      error:
        "Invalid field 'name': must be a string of 1 to 100 characters after trimming, without control characters, invisible formatting characters (zero-width, bidi, BOM), Unicode line separators or invalid Unicode",
    });
  });

  test('400 for a body that is not JSON', async () => {
    const response = await register('{"email": ');
    expect(response.statusCode).toBe(400);
    expect(Object.keys(response.json())).toEqual(['error']);
  });

  test('415 for a content type other than application/json', async () => {
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      const response = await register('email=a@b.co', { 'content-type': type });
      expect(response.statusCode).toBe(415);
      expect(Object.keys(response.json())).toEqual(['error']);
    }
  });

  test('413 for a body over 16 KiB', async () => {
    const response = await register({
      email: 'big@example.com',
      name: 'x',
      pad: 'p'.repeat(17 * 1024),
    });
    expect(response.statusCode).toBe(413);
    expect(Object.keys(response.json())).toEqual(['error']);
    expect(response.json().error).toBe('Request body is larger than 16384 bytes');
  });
});

describe('registration limit per client address', () => {
  test('every attempt counts; X-Forwarded-For is believed only from TRUST_PROXY', async () => {
    const gateway = await inProcessGateway({
      REGISTRATIONS_PER_HOUR: '3',
      TRUST_PROXY: '127.0.0.1',
      CATALOG_URL: 'http://127.0.0.1:9',
    });
    try {
      const attempt = (remoteAddress: string, forwardedFor?: string) =>
        gateway.app.inject({
          method: 'POST',
          url: '/v1/register',
          remoteAddress,
          headers: {
            'content-type': 'application/json',
            ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}),
          },
          payload: '{not json',
        });
      for (let i = 0; i < 3; i++) expect((await attempt('10.1.1.1')).statusCode).toBe(400);
      const limited = await attempt('10.1.1.1');
      expect(limited.statusCode).toBe(429);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.json().error).toContain('3');

      // An untrusted peer cannot dodge the limit by claiming another address...
      for (let i = 0; i < 3; i++) await attempt('10.2.2.2', `203.0.113.${i}`);
      expect((await attempt('10.2.2.2', '203.0.113.99')).statusCode).toBe(429);
      // ...while the trusted proxy's forwarded address is the client's.
      expect((await attempt('127.0.0.1', '198.51.100.7')).statusCode).toBe(400);
    } finally {
      await gateway.close();
    }
  });

  test.each([
    ['its socket address', {}, {}],
    [
      'the address a trusted proxy forwards',
      { TRUST_PROXY: '127.0.0.1' },
      { 'X-Forwarded-For': '198.51.100.7' },
    ],
  ])(
    'an attempt whose connection is reset at once still counts for %s',
    async (_name, env: Record<string, string>, forwarded: Record<string, string>) => {
      const gateway = await inProcessGateway({
        REGISTRATIONS_PER_HOUR: '3',
        CATALOG_URL: 'http://127.0.0.1:9',
        ...env,
      });
      try {
        await gateway.app.listen({ port: 0, host: '127.0.0.1' });
        const server = gateway.app.server;
        const { port } = server.address() as { port: number };
        const body = '{not json';
        const headers = { 'Content-Type': 'application/json', ...forwarded };
        // The body is announced longer than sent: the client resets before any answer.
        const request =
          'POST /v1/register HTTP/1.1\r\nHost: x\r\n' +
          Object.entries(headers)
            .map(([name, value]) => `${name}: ${value}\r\n`)
            .join('') +
          `Content-Length: ${body.length + 100}\r\n\r\n${body}`;
        for (let i = 0; i < 3; i++) {
          await new Promise<void>((resolve, reject) => {
            const socket = connect(port, '127.0.0.1', () =>
              socket.write(request, () => {
                socket.resetAndDestroy();
                resolve();
              }),
            );
            socket.once('error', reject);
          });
        }
        // The server has seen each of them once it has closed their connections.
        await waitFor(
          () =>
            new Promise<true | undefined>((resolve) =>
              server.getConnections((_err, count) => resolve(count === 0 ? true : undefined)),
            ),
          { what: 'the reset connections to close' },
        );
        const next = await fetch(`http://127.0.0.1:${port}/v1/register`, {
          method: 'POST',
          headers,
          body,
        });
        expect(next.status).toBe(429);
      } finally {
        await gateway.close();
      }
    },
  );
});
