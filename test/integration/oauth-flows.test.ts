import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { freePort, waitFor } from '../support/ports';
import {
  OAuthBrowser,
  REDIRECT_URI,
  authorize,
  exchangeCode,
  mcpWithToken,
  pkce,
  registerClient,
  signIn,
} from '../support/oauth-flow';
import { RedisServer } from '../support/redis-server';
import { ServiceProcess, keyedGet, keysCli, tempDataDir } from '../support/services';
import { within } from '../support/waits';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** What "on every replica within 1 s" is allowed on a busy machine. */
const WITHIN_A_SECOND = within(1_000);

/**
 * The gateway as the MCP endpoint's OAuth authorization server (docs/api.md, "Connecting an
 * agent host"), over HTTP as agent hosts use it: discovery, registration, PKCE, consent with an
 * API key, tokens, refresh, revocation; what a token may do and when it stops; hostile input. Two
 * gateway replicas behind one public address share every record (one DATA_DIR, one Redis).
 */
describe('OAuth for agents, on two gateway replicas', () => {
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };
  let redis: RedisServer;
  let catalog: ServiceProcess;
  const gateways: ServiceProcess[] = [];
  let publicUrl: string;
  let browser: OAuthBrowser;
  let emails = 0;

  async function newKey(tier = 'pro', extra: string[] = []): Promise<Json> {
    emails += 1;
    return (await keysCli(
      ['create', '--tier', tier, '--email', `oauth${emails}@example.com`, '--name', 'O', ...extra],
      env,
    )) as Json;
  }

  beforeAll(async () => {
    redis = await RedisServer.start();
    env.REDIS_URL = redis.url;
    catalog = await ServiceProcess.start('catalog', env);
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    for (const gatewayPort of [port, await freePort()]) {
      gateways.push(
        await ServiceProcess.start('gateway', {
          ...env,
          PORT: String(gatewayPort),
          PUBLIC_URL: publicUrl,
          CATALOG_URL: catalog.url,
        }),
      );
    }
    browser = new OAuthBrowser(publicUrl);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([...gateways.map((g) => g.stop()), catalog?.stop()]);
    await redis?.stop();
  });

  test('discovery: the 401 names the resource metadata, which names this authorization server', async () => {
    const refused = await fetch(`${publicUrl}/v1/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(refused.status).toBe(401);
    const metadataUrl = `${publicUrl}/.well-known/oauth-protected-resource/v1/mcp`;
    expect(refused.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${metadataUrl}", ApiKey realm="Tool Directory", header="x-api-key"`,
    );
    const resource = (await (await fetch(metadataUrl)).json()) as Json;
    expect(resource).toMatchObject({
      resource: `${publicUrl}/v1/mcp`,
      authorization_servers: [publicUrl],
      scopes_supported: ['catalog:read'],
    });
    const root = (await (
      await fetch(`${publicUrl}/.well-known/oauth-protected-resource`)
    ).json()) as Json;
    expect(root.authorization_servers).toEqual([publicUrl]);
    const server = (await (
      await fetch(`${publicUrl}/.well-known/oauth-authorization-server`)
    ).json()) as Json;
    expect(server).toMatchObject({
      issuer: publicUrl,
      authorization_endpoint: `${publicUrl}/oauth/authorize`,
      token_endpoint: `${publicUrl}/oauth/token`,
      registration_endpoint: `${publicUrl}/oauth/register`,
      revocation_endpoint: `${publicUrl}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      client_id_metadata_document_supported: true,
    });
    // The same from the other replica: one server behind one address.
    const other = await fetch(`${gateways[1]!.url}/.well-known/oauth-authorization-server`);
    expect(((await other.json()) as Json).token_endpoint).toBe(server.token_endpoint);
  });

  test('a signed-in agent calls MCP with the token on both replicas, as its key, and the key event records the grant', async () => {
    const key = await newKey();
    const { tokens } = await signIn(browser, key.apiKey);
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'catalog:read' });
    expect(typeof tokens.refresh_token).toBe('string');
    for (const gateway of gateways) {
      const answer = await mcpWithToken(gateway.url, tokens.access_token);
      expect([gateway.url, answer.status]).toEqual([gateway.url, 200]);
      expect(answer.body.result.tools.length).toBeGreaterThan(0);
    }
    // The token is for the MCP endpoint, not the REST API.
    const rest = await fetch(`${publicUrl}/v1/tools`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(rest.status).toBe(401);
    const events = await keyedGet(publicUrl, key.apiKey, '/v1/keys/events');
    expect(events.body.data[0]).toMatchObject({
      type: 'authorized',
      by: 'self',
      detail: { clientName: 'Test Agent', scopes: ['catalog:read'] },
    });
  });

  test('refresh tokens rotate: the new one works, the old one is refused and ends the grant', async () => {
    const key = await newKey();
    const { clientId, tokens } = await signIn(browser, key.apiKey);
    const refresh = (token: string) =>
      browser.form('/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: token,
        client_id: clientId,
      });
    const renewed = await refresh(tokens.refresh_token);
    expect(renewed.status).toBe(200);
    expect(renewed.body.refresh_token).not.toBe(tokens.refresh_token);
    expect((await mcpWithToken(publicUrl, renewed.body.access_token)).status).toBe(200);
    const replayed = await refresh(tokens.refresh_token);
    expect(replayed).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  test('PKCE: S256 only, and the verifier must match', async () => {
    const clientId = await registerClient(browser);
    const key = await newKey();
    const { verifier, challenge } = pkce();
    const { redirected } = await authorize(
      browser,
      clientId,
      { apiKey: key.apiKey },
      { challenge },
    );
    const code = redirected!.searchParams.get('code')!;
    const wrong = await exchangeCode(browser, clientId, code, pkce().verifier);
    expect(wrong).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    // Only the holder of the verifier can spend it: a wrong guess does not, the verifier does.
    expect((await exchangeCode(browser, clientId, code, verifier)).status).toBe(200);

    for (const [method, value] of [
      ['plain', 'x'.repeat(43)],
      [undefined, undefined],
    ] as const) {
      const query = new URLSearchParams({
        client_id: clientId,
        response_type: 'code',
        redirect_uri: REDIRECT_URI,
        scope: 'catalog:read',
        ...(value && { code_challenge: value }),
        ...(method && { code_challenge_method: method }),
      });
      const response = await browser.request(`/oauth/authorize?${query}`);
      const location = new URL(response.headers.get('location') ?? 'x:', publicUrl);
      expect([method, location.searchParams.get('error')]).toEqual([method, 'invalid_request']);
    }
  });

  test('a code used twice is refused, and what its first use issued stops working', async () => {
    const clientId = await registerClient(browser);
    const key = await newKey();
    const { verifier, challenge } = pkce();
    const { redirected } = await authorize(
      browser,
      clientId,
      { apiKey: key.apiKey },
      { challenge },
    );
    const code = redirected!.searchParams.get('code')!;
    const first = await exchangeCode(browser, clientId, code, verifier);
    expect(first.status).toBe(200);
    const second = await exchangeCode(browser, clientId, code, verifier);
    expect(second).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    await waitFor(
      async () =>
        (await mcpWithToken(publicUrl, first.body.access_token)).status === 401 ? true : undefined,
      { timeoutMs: WITHIN_A_SECOND, what: 'the first token revoked' },
    );
  });

  test('redirect URIs match exactly; an unknown one is a JSON error, never a redirect', async () => {
    const clientId = await registerClient(browser);
    for (const redirect of [`${REDIRECT_URI}/`, `${REDIRECT_URI}?x=1`, 'http://evil.example/cb']) {
      const query = new URLSearchParams({
        client_id: clientId,
        response_type: 'code',
        redirect_uri: redirect,
        code_challenge: pkce().challenge,
        code_challenge_method: 'S256',
      });
      const response = await browser.request(`/oauth/authorize?${query}`);
      expect([redirect, response.status]).toEqual([redirect, 400]);
      expect(response.headers.get('location')).toBeNull();
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(((await response.json()) as Json).error).toBe('invalid_redirect_uri');
    }
  });

  test('the person may deny; a wrong, ended or previous secret cannot consent', async () => {
    const clientId = await registerClient(browser);
    const denied = await authorize(browser, clientId, { deny: true });
    expect(denied.redirected!.searchParams.get('error')).toBe('access_denied');

    const wrong = await authorize(browser, clientId, { apiKey: 'tdk_not-a-key' });
    expect(wrong).toMatchObject({ consentStatus: 401, consentBody: { error: expect.any(String) } });

    const key = await newKey();
    const rolled = (await keysCli(['roll', key.keyId, '--grace-seconds', '600'], env)) as Json;
    expect(rolled.apiKey).not.toBe(key.apiKey);
    const previous = await authorize(browser, clientId, { apiKey: key.apiKey });
    expect(previous).toMatchObject({ consentStatus: 403 });

    const usageOnly = await newKey('pro', ['--scopes', 'usage']);
    const scoped = await authorize(browser, clientId, { apiKey: usageOnly.apiKey });
    expect(scoped).toMatchObject({ consentStatus: 403 });
  });

  test('RFC 7009 revocation ends a token on every replica within a second', async () => {
    const key = await newKey();
    const { clientId, tokens } = await signIn(browser, key.apiKey);
    expect((await mcpWithToken(gateways[1]!.url, tokens.access_token)).status).toBe(200);
    const response = await browser.request('/oauth/revoke', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.access_token, client_id: clientId }),
    });
    expect(response.status).toBe(200);
    for (const gateway of gateways) {
      const refused = await waitFor(
        async () => {
          const answer = await mcpWithToken(gateway.url, tokens.access_token);
          return answer.status === 401 ? answer : undefined;
        },
        { timeoutMs: WITHIN_A_SECOND, what: 'the revoked token refused' },
      );
      expect(refused.challenge).toMatch(/^Bearer resource_metadata="[^"]+", error="invalid_token"/);
    }
  });

  test.each([
    ['revoking the key', (keyId: string) => ['revoke', keyId], /revoked/],
    [
      'rolling it with no grace',
      (keyId: string) => ['roll', keyId, '--grace-seconds', '0'],
      /replaced/,
    ],
  ])('%s ends its tokens on every replica within a second', async (_name, command, message) => {
    const key = await newKey();
    const { tokens } = await signIn(browser, key.apiKey);
    for (const gateway of gateways) {
      expect((await mcpWithToken(gateway.url, tokens.access_token)).status).toBe(200);
    }
    await keysCli(command(key.keyId as string), env);
    const ended = Date.now();
    for (const gateway of gateways) {
      const refused = await waitFor(
        async () => {
          const answer = await mcpWithToken(gateway.url, tokens.access_token);
          return answer.status === 401 ? answer : undefined;
        },
        { timeoutMs: WITHIN_A_SECOND, intervalMs: 20, what: 'the token of an ended key refused' },
      );
      expect(refused.body.error).toMatch(message);
    }
    expect(Date.now() - ended).toBeLessThan(WITHIN_A_SECOND);
  });

  test('x-api-key keeps working on /v1/mcp beside tokens', async () => {
    const key = await newKey();
    const response = await fetch(`${publicUrl}/v1/mcp`, {
      method: 'POST',
      headers: {
        'x-api-key': key.apiKey,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(response.status).toBe(200);
  });

  test('hostile input on every new endpoint: JSON errors, never a 5xx', async () => {
    const long = 'x'.repeat(100_000);
    const attempts: [string, RequestInit][] = [
      ['/oauth/token', { method: 'POST', body: 'grant_type=authorization_code&code=nope' }],
      [
        '/oauth/token',
        {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'grant_type=password&username=a&password=b',
        },
      ],
      [
        '/oauth/token',
        { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' },
      ],
      [
        '/oauth/register',
        { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' },
      ],
      [
        '/oauth/register',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ redirect_uris: ['javascript:alert(1)'] }),
        },
      ],
      [
        '/oauth/register',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ redirect_uris: [long] }),
        },
      ],
      ['/oauth/revoke', { method: 'POST', body: 'token=' }],
      ['/oauth/authorize', {}],
      [`/oauth/authorize?client_id=${long.slice(0, 5000)}&response_type=code`, {}],
      ['/oauth/authorize?client_id=https%3A%2F%2F127.0.0.1%2Fclient.json&response_type=code', {}],
      ['/oauth/consent/unknown-interaction/details', {}],
      [
        '/oauth/consent/unknown-interaction',
        { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"allow":true}' },
      ],
      [
        '/oauth/consent/unknown-interaction',
        { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[' },
      ],
      ['/oauth/jwks', { method: 'DELETE' }],
      ['/oauth/nothing-here', {}],
    ];
    for (const [url, init] of attempts) {
      const response = await fetch(`${publicUrl}${url}`, init);
      const text = await response.text();
      expect([url, response.status < 500]).toEqual([url, true]);
      expect([url, response.headers.get('content-type')]).toEqual([
        url,
        expect.stringMatching(/^application\/json/),
      ]);
      const body = JSON.parse(text) as Json;
      expect([url, typeof body.error]).toEqual([url, 'string']);
    }
    // The JWKS holds public keys only.
    const jwks = (await (await fetch(`${publicUrl}/oauth/jwks`)).json()) as Json;
    expect(jwks.keys.length).toBeGreaterThan(0);
    for (const key of jwks.keys as Json[]) expect(key).not.toHaveProperty('d');
  });
});

/**
 * A client that registers nothing: its client_id is the https URL of its metadata document
 * (draft-ietf-oauth-client-id-metadata-document), which the gateway fetches. Served here with a
 * certificate of the test's own, which the gateway is told to trust; private addresses are
 * allowed for the test (OAUTH_CLIENT_METADATA_ALLOW_PRIVATE), as they never are by default.
 */
describe('OAuth with a client ID metadata document', () => {
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };
  let catalog: ServiceProcess;
  let gateway: ServiceProcess;
  let server: ReturnType<typeof createServer>;
  let clientId: string;

  beforeAll(async () => {
    const dir = tempDataDir();
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'],
        ...['-days', '1', '-keyout', 'key.pem', '-out', 'cert.pem', '-subj', '/CN=127.0.0.1'],
        ...['-addext', 'subjectAltName=IP:127.0.0.1'],
      ],
      { cwd: dir, stdio: 'ignore' },
    );
    server = createServer(
      {
        key: readFileSync(path.join(dir, 'key.pem')),
        cert: readFileSync(path.join(dir, 'cert.pem')),
      },
      (_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            client_id: clientId,
            client_name: 'Metadata Document Agent',
            redirect_uris: [REDIRECT_URI],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: 'none',
          }),
        );
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    clientId = `https://127.0.0.1:${(server.address() as AddressInfo).port}/oauth/client.json`;
    catalog = await ServiceProcess.start('catalog', env);
    const port = await freePort();
    gateway = await ServiceProcess.start('gateway', {
      ...env,
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      CATALOG_URL: catalog.url,
      OAUTH_CLIENT_METADATA_ALLOW_PRIVATE: 'true',
      NODE_EXTRA_CA_CERTS: path.join(dir, 'cert.pem'),
    });
  }, 60_000);
  afterAll(async () => {
    await Promise.all([gateway?.stop(), catalog?.stop()]);
    server?.close();
  });

  test('the document is the registration: consent shows its name, the code and tokens follow', async () => {
    const browser = new OAuthBrowser(gateway.url);
    const key = (await keysCli(
      ['create', '--tier', 'pro', '--email', 'cimd@example.com', '--name', 'C'],
      env,
    )) as Json;
    const { verifier, challenge } = pkce();
    const query = new URLSearchParams({
      client_id: clientId,
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope: 'catalog:read',
    });
    const started = await browser.request(`/oauth/authorize?${query}`);
    const consent = started.headers.get('location')!;
    expect([started.status, consent]).toEqual([303, expect.stringMatching(/^\/oauth\/consent\//)]);
    const details = (await (await browser.request(`${consent}/details`)).json()) as Json;
    expect(details.client).toMatchObject({ id: clientId, name: 'Metadata Document Agent' });
    const { redirected } = await authorize(
      browser,
      clientId,
      { apiKey: key.apiKey },
      { challenge },
    );
    const code = redirected!.searchParams.get('code')!;
    const tokens = await exchangeCode(browser, clientId, code, verifier);
    expect(tokens.status).toBe(200);
    expect((await mcpWithToken(gateway.url, tokens.body.access_token)).status).toBe(200);
  });

  test('a redirect URI the document does not list is refused', async () => {
    const browser = new OAuthBrowser(gateway.url);
    const query = new URLSearchParams({
      client_id: clientId,
      response_type: 'code',
      redirect_uri: 'http://127.0.0.1:9/elsewhere',
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
    });
    const response = await browser.request(`/oauth/authorize?${query}`);
    expect(response.status).toBe(400);
    expect(((await response.json()) as Json).error).toBe('invalid_redirect_uri');
  });
});
