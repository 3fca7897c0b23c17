import { generateApiKey } from '../../../services/gateway/src/keys/api-key';
import { inProcessGateway, registerInProcess } from '../../support/gateway';
import { scanningProvider } from '../../support/secret-scanning';

type Gateway = Awaited<ReturnType<typeof inProcessGateway>>;

/**
 * `POST /v1/keys/leaks` (docs/security.md, "Leak reports"): signed reports of secrets found in
 * public end every working one among them; anything unsigned changes nothing.
 */
describe('leak reports', () => {
  const provider = scanningProvider();
  const stranger = scanningProvider(provider.identifier);
  let gateway: Gateway;
  let emails = 0;

  beforeAll(async () => {
    gateway = await inProcessGateway({
      SECRET_SCANNING_PUBLIC_KEYS: provider.publicKeysFile,
      LEAK_REPORTS_PER_MINUTE: '20',
      CATALOG_URL: 'http://127.0.0.1:9',
    });
  });
  afterAll(() => gateway.close());

  const register = () => registerInProcess(gateway.app, `leak-${(emails += 1)}@example.com`);
  const use = (key: string) =>
    gateway.app.inject({ url: '/nothing-here', headers: { 'x-api-key': key } });
  const send = (report: { body: string; headers: Record<string, string> }, address = '10.8.0.1') =>
    gateway.app.inject({
      method: 'POST',
      url: '/v1/keys/leaks',
      headers: report.headers,
      payload: report.body,
      remoteAddress: address,
    });

  test('a working secret is a true positive and ends at once, naming where it leaked', async () => {
    const current = await register();
    const old = await register();
    const rolled = await gateway.app.inject({
      method: 'POST',
      url: '/v1/keys/roll',
      headers: { 'x-api-key': old },
      payload: { graceSeconds: 3_600 },
    });
    const successor = rolled.json<{ apiKey: string }>().apiKey;
    const url = 'https://github.com/octo/app/blob/main/.env';
    const tokens = [current, old, generateApiKey(), 'not-a-key'];
    const response = await send(provider.report(tokens, url));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(
      tokens.map((token, i) => ({
        token_raw: token,
        token_type: 'tool_directory_api_key',
        label: i < 2 ? 'true_positive' : 'false_positive',
      })),
    );
    for (const leaked of [current, old]) {
      const refused = await use(leaked);
      expect(refused.statusCode).toBe(401);
      expect(refused.json()).toEqual({
        error: `The API key is invalid: it was revoked because it was reported leaked at ${url}`,
      });
    }
    // A leaked previous secret ends alone: the key works on with the secret that replaced it.
    expect((await use(successor)).statusCode).toBe(404);
    // Reported again: no longer working, so a false positive, and nothing changes.
    const again = await send(provider.report([current]));
    expect(again.json()).toEqual([
      { token_raw: current, token_type: 'tool_directory_api_key', label: 'false_positive' },
    ]);
  });

  test('a report not signed by an accepted key is 401 and revokes nothing', async () => {
    const key = await register();
    const signed = provider.report([key]);
    const forged = stranger.report([key]);
    const cases = [
      forged.headers,
      { ...signed.headers, 'github-public-key-identifier': 'another-key' },
      { ...signed.headers, 'github-public-key-signature': 'bm90IGEgc2lnbmF0dXJl' },
      { 'content-type': 'application/json' },
    ];
    for (const headers of cases) {
      const response = await send({ body: signed.body, headers });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({
        error: 'The leak report is not signed by an accepted secret-scanning key',
      });
      expect(response.headers['www-authenticate']).toMatch(/^Signature /);
    }
    // The right signature over another body.
    const tampered = await send({
      body: signed.body.replace('content', 'commit'),
      headers: signed.headers,
    });
    expect(tampered.statusCode).toBe(401);
    expect((await use(key)).statusCode).toBe(404);
  });

  test('bounded: at most 1,000 tokens (413), a body of the wrong shape is 400', async () => {
    const many = provider.report(Array.from({ length: 1_001 }, () => generateApiKey()));
    const tooMany = await send(many, '10.8.0.2');
    expect(tooMany.statusCode).toBe(413);
    expect(tooMany.json()).toEqual({ error: 'A leak report holds at most 1000 tokens' });
    const body = JSON.stringify({ token: 'x' });
    const wrongShape = await send(
      {
        body,
        headers: {
          ...provider.report([]).headers,
          'github-public-key-signature': provider.sign(body),
        },
      },
      '10.8.0.2',
    );
    expect(wrongShape.statusCode).toBe(400);
    expect(wrongShape.json().error).toEqual(expect.any(String));
  });

  test('limited per address, signed or not', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) {
      statuses.push(
        (await send({ body: '[]', headers: { 'content-type': 'application/json' } }, '10.8.0.3'))
          .statusCode,
      );
    }
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(401));
    const limited = await send(provider.report([]), '10.8.0.3');
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({
      error: 'Too many leak reports from this address; at most 20 a minute',
    });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
  });
});

describe('leak reports without SECRET_SCANNING_PUBLIC_KEYS', () => {
  test('the endpoint is not there: 404', async () => {
    const gateway = await inProcessGateway({ CATALOG_URL: 'http://127.0.0.1:9' });
    try {
      const response = await gateway.app.inject({
        method: 'POST',
        url: '/v1/keys/leaks',
        headers: { 'content-type': 'application/json' },
        payload: '[]',
      });
      expect(response.statusCode).toBe(404);
      expect(response.json().error).toMatch(/does not exist/);
    } finally {
      await gateway.close();
    }
  });
});
