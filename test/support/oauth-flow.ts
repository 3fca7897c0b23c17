import { createHash, randomBytes } from 'node:crypto';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** PKCE's verifier and its S256 challenge. */
export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/**
 * A browser's view of the authorization server, without a browser: requests with a cookie jar,
 * redirects not followed (each one is looked at).
 */
export class OAuthBrowser {
  private readonly jar = new Map<string, string>();

  constructor(readonly base: string) {}

  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const cookie = [...this.jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(url.startsWith('http') ? url : `${this.base}${url}`, {
      redirect: 'manual',
      ...init,
      headers: { ...(init.headers as Record<string, string>), ...(cookie && { cookie }) },
    });
    for (const header of response.headers.getSetCookie()) {
      const [pair] = header.split(';');
      const at = pair!.indexOf('=');
      this.jar.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    return response;
  }

  async json(url: string, body: Json): Promise<{ status: number; body: Json; headers: Headers }> {
    const response = await this.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      body: (await response.json()) as Json,
      headers: response.headers,
    };
  }

  async form(url: string, fields: Record<string, string>) {
    const response = await this.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    });
    return {
      status: response.status,
      body: (await response.json()) as Json,
      headers: response.headers,
    };
  }
}

export const REDIRECT_URI = 'http://127.0.0.1:9/callback';

/** A client registered dynamically (RFC 7591), public, with one redirect URI. */
export async function registerClient(browser: OAuthBrowser, name = 'Test Agent') {
  const { status, body } = await browser.json('/oauth/register', {
    redirect_uris: [REDIRECT_URI],
    client_name: name,
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  });
  if (status !== 201) throw new Error(`registration: ${status} ${JSON.stringify(body)}`);
  return body.client_id as string;
}

/**
 * The authorization code flow up to the code: the authorization request, the consent page's
 * decision (`apiKey`, or a denial), and the redirect back. Returns the last redirect's URL.
 */
export async function authorize(
  browser: OAuthBrowser,
  clientId: string,
  decision: { apiKey: string } | { deny: true },
  { challenge, scope = 'catalog:read', resource = `${browser.base}/v1/mcp` } = {} as {
    challenge?: string;
    scope?: string;
    resource?: string;
  },
) {
  const query = new URLSearchParams({
    client_id: clientId,
    response_type: 'code',
    redirect_uri: REDIRECT_URI,
    code_challenge: challenge ?? pkce().challenge,
    code_challenge_method: 'S256',
    scope,
    resource,
    state: 'state-1',
  });
  const started = await browser.request(`/oauth/authorize?${query}`);
  const consent = started.headers.get('location');
  if (started.status !== 303 || !consent?.startsWith('/oauth/consent/')) {
    throw new Error(`authorize: ${started.status} ${await started.text()}`);
  }
  const answer = await browser.json(
    consent,
    'deny' in decision ? { allow: false } : { allow: true, apiKey: decision.apiKey },
  );
  if (answer.status !== 200) return { consentStatus: answer.status, consentBody: answer.body };
  const resumed = await browser.request(answer.body.redirectTo as string);
  const location = resumed.headers.get('location');
  if (location === null) throw new Error(`resume: ${resumed.status} ${await resumed.text()}`);
  return { redirected: new URL(location, browser.base) };
}

/** Code to tokens at the token endpoint. */
export function exchangeCode(
  browser: OAuthBrowser,
  clientId: string,
  code: string,
  verifier: string,
) {
  return browser.form('/oauth/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
    code_verifier: verifier,
  });
}

/** A signed-in agent: its client id and tokens, from a fresh registration. */
export async function signIn(browser: OAuthBrowser, apiKey: string, scope?: string) {
  const clientId = await registerClient(browser);
  const { verifier, challenge } = pkce();
  const flow = await authorize(
    browser,
    clientId,
    { apiKey },
    { challenge, ...(scope && { scope }) },
  );
  const code = flow.redirected?.searchParams.get('code');
  if (!code) throw new Error(`no code: ${JSON.stringify(flow)}`);
  const tokens = await exchangeCode(browser, clientId, code, verifier);
  if (tokens.status !== 200)
    throw new Error(`token: ${tokens.status} ${JSON.stringify(tokens.body)}`);
  return { clientId, tokens: tokens.body };
}

/** An MCP `server/discover` with a bearer token: its status and challenge. */
export async function mcpWithToken(gatewayUrl: string, token: string) {
  const response = await fetch(`${gatewayUrl}/v1/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
  return {
    status: response.status,
    challenge: response.headers.get('www-authenticate'),
    body: (await response.json()) as Json,
  };
}
