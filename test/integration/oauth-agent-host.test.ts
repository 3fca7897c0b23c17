import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Client,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import { type Browser, chromium } from 'playwright-core';
import { freePort, waitFor } from '../support/ports';
import { ServiceProcess, keyedGet, keysCli, tempDataDir } from '../support/services';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const TOOLS: [string, Json][] = [
  ['search_tools', { q: 'vector database', limit: 2 }],
  ['get_tool', { slug: 'langchain' }],
  ['get_tool_history', { slug: 'langchain' }],
  ['list_categories', {}],
  ['list_tools', { limit: 2 }],
  ['compare_tools', { tool1: 'langchain', tool2: 'llamaindex' }],
];

/** An agent host's redirect URI: a local server that takes the authorization code. */
async function callbackServer() {
  let resolveCode: (params: URLSearchParams) => void = () => {};
  const codes: Promise<URLSearchParams>[] = [];
  const next = () => codes.push(new Promise<URLSearchParams>((resolve) => (resolveCode = resolve)));
  next();
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url!, 'http://127.0.0.1');
    const code = url.searchParams.get('code');
    response.writeHead(200, { 'content-type': 'text/plain' }).end(code ? 'signed in' : 'no code');
    if (code) {
      resolveCode(url.searchParams);
      next();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    /** The next redirect's parameters: the code and the issuer (RFC 9207). */
    code: () => codes[0]!.then((params) => (codes.shift(), params)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What an agent host keeps of its sign-in: the SDK's OAuthClientProvider, in memory. */
class HostAuth implements OAuthClientProvider {
  private info: Json | undefined;
  private saved: Json | undefined;
  private verifier = '';
  private discovery: unknown;
  authorizationUrl: URL | undefined;

  constructor(readonly redirectUrl: string) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Chromium Agent Host',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info as never;
  }
  saveClientInformation(info: Json) {
    this.info = info;
  }
  tokens() {
    return this.saved as never;
  }
  saveTokens(tokens: Json) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  saveDiscoveryState(state: unknown) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery as never;
  }
  /** Spoils the access token, as if it had expired: the SDK must refresh. */
  spoilAccessToken() {
    this.saved = { ...this.saved!, access_token: 'expired-or-revoked' };
  }
  get current(): Json {
    return this.saved!;
  }
}

/**
 * An agent host's whole sign-in, as Claude's or ChatGPT's connectors do it, with the official
 * MCP SDK client and Debian's Chromium as the person's browser (docs/api.md, "Connecting an
 * agent host"): discovery from the 401, dynamic registration, PKCE, the consent page with an API
 * key (or a free key registered there), the token, every tool called with it, a refresh; on two
 * gateway replicas behind one public address.
 */
describe('an agent host signs in with OAuth and calls every tool', () => {
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };
  let catalog: ServiceProcess;
  const gateways: ServiceProcess[] = [];
  let publicUrl: string;
  let browser: Browser;
  let callback: Awaited<ReturnType<typeof callbackServer>>;

  beforeAll(async () => {
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
          REGISTRATIONS_PER_HOUR: '100',
        }),
      );
    }
    callback = await callbackServer();
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await callback?.close();
    await Promise.all([...gateways.map((g) => g.stop()), catalog?.stop()]);
  });

  /** The person in Chromium: the consent page, a key typed or registered there, Allow. */
  async function consent(authorizationUrl: URL, apiKey: string | 'register') {
    const context = await browser.newContext();
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(authorizationUrl.href);
    await page.locator('#client-name').filter({ hasText: 'Chromium Agent Host' }).waitFor();
    expect(await page.locator('#scopes li').allTextContents()).toEqual([
      'read the catalog: tools, categories, search, comparisons',
    ]);
    if (apiKey === 'register') {
      await page.locator('#register summary').click();
      await page.fill('#register-email', `host${Date.now()}@example.com`);
      await page.fill('#register-name', 'Agent Person');
      await page.click('#register-button');
      await waitFor(
        async () => ((await page.inputValue('#api-key')).startsWith('tdk_') ? true : undefined),
        { what: 'the free key filled in' },
      );
    } else {
      await page.fill('#api-key', apiKey);
    }
    const code = callback.code();
    await page.click('#allow');
    await page.waitForURL(/\/callback\?/);
    expect(errors).toEqual([]);
    await context.close();
    return code;
  }

  /** The SDK's client through the OAuth flow; connected, with its auth. */
  async function signedInClient(apiKey: string | 'register', gatewayUrl = publicUrl) {
    const auth = new HostAuth(callback.url);
    const mcpUrl = new URL(`${gatewayUrl}/v1/mcp`);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: auth });
    await expect(new Client({ name: 'host', version: '1.0.0' }).connect(first)).rejects.toThrow(
      UnauthorizedError,
    );
    expect(auth.authorizationUrl!.href.startsWith(`${publicUrl}/oauth/authorize?`)).toBe(true);
    expect(auth.authorizationUrl!.searchParams.get('code_challenge_method')).toBe('S256');
    const code = await consent(auth.authorizationUrl!, apiKey);
    await first.finishAuth(code);
    const client = new Client({ name: 'host', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: auth }));
    return { client, auth };
  }

  test('with a Pro key: every tool answers with the token, as the key, on both replicas; a refresh keeps it going', async () => {
    const key = (await keysCli(
      ['create', '--tier', 'pro', '--email', 'host-pro@example.com', '--name', 'Host'],
      env,
    )) as Json;
    const usage = async () =>
      (await keyedGet(publicUrl, key.apiKey, '/v1/usage')).body.data.used as number;
    const { client, auth } = await signedInClient(key.apiKey);
    const before = await usage();
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(
      TOOLS.map(([name]) => name).sort(),
    );
    for (const [name, args] of TOOLS) {
      const result = await client.callTool({ name, arguments: args });
      expect([name, result.isError ?? false]).toEqual([name, false]);
      expect([name, typeof result.structuredContent]).toEqual([name, 'object']);
    }
    // Each call took a unit of the key's quota, as it would with the key itself.
    expect(await usage()).toBe(before + TOOLS.length);

    // The same token on the other replica.
    const other = new Client({ name: 'host', version: '1.0.0' });
    await other.connect(
      new StreamableHTTPClientTransport(new URL(`${gateways[1]!.url}/v1/mcp`), {
        authProvider: auth,
      }),
    );
    expect((await other.callTool({ name: 'list_categories', arguments: {} })).isError).toBeFalsy();

    // An access token that no longer works: the SDK refreshes it, the refresh token rotates.
    const refreshToken = auth.current.refresh_token as string;
    auth.spoilAccessToken();
    const again = new Client({ name: 'host', version: '1.0.0' });
    await again.connect(
      new StreamableHTTPClientTransport(new URL(`${publicUrl}/v1/mcp`), { authProvider: auth }),
    );
    expect(
      (await again.callTool({ name: 'get_tool', arguments: { slug: 'ollama' } })).isError,
    ).toBeFalsy();
    expect(auth.current.refresh_token).not.toBe(refreshToken);
    for (const c of [client, other, again]) await c.close();
  });

  test('with a free key registered on the consent page: the tools of its tier', async () => {
    const { client } = await signedInClient('register');
    const compared = await client.callTool({
      name: 'compare_tools',
      arguments: { tool1: 'langchain', tool2: 'llamaindex' },
    });
    expect(compared.isError).toBe(true);
    const found = await client.callTool({ name: 'search_tools', arguments: { q: 'agents' } });
    expect(found.isError ?? false).toBe(false);
    await client.close();
  });
});
