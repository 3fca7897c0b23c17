import Provider, { type Configuration, errors } from 'oidc-provider';
import { MCP_ROUTE, SCOPES, type Scope } from '../../../shared/contract';
import { checkWebhookUrl } from '../../../catalog/src/webhooks/ssrf-guard';
import { oauthAdapter } from './oauth-adapter';
import type { OAuthStore } from './oauth-store';
import { serverKeys } from './server-keys';

/** The authorization server's endpoints, under /oauth (docs/api.md#connecting-an-agent-host-oauth). */
export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  end_session: '/oauth/logout',
  userinfo: '/oauth/userinfo',
  pushed_authorization_request: '/oauth/par',
  code_verification: '/oauth/device',
  device_authorization: '/oauth/device/auth',
  introspection: '/oauth/introspect',
  backchannel_authentication: '/oauth/backchannel',
  challenge: '/oauth/challenge',
} as const;

/** Where the person signs in with an API key and allows or denies (the portal's consent page). */
export const CONSENT_PATH = '/oauth/consent';

const HOUR_S = 3_600;
const DAY_S = 24 * HOUR_S;

export interface AuthorizationServerOptions {
  /** PUBLIC_URL: the issuer, and the origin of the protected resource. */
  issuer: string;
  store: OAuthStore;
  /** Whether the secret with this digest may still act: a grant ends with its key's secret. */
  secretWorks: (digest: string) => Promise<boolean>;
  /** Client ID metadata documents may be fetched over http and from private addresses (tests). */
  allowPrivateClientMetadata: boolean;
}

/** RFC 9728's metadata document of a protected resource, at its path under this prefix. */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** Where a client finds the MCP endpoint's metadata (named in its 401's challenge). */
export function mcpResourceMetadataUrl(issuer: string): string {
  return `${issuer}${RESOURCE_METADATA_PATH}${MCP_ROUTE.url}`;
}

/** The resources a token may be for: the MCP endpoint (and the API as a whole, its origin). */
export function protectedResources(issuer: string) {
  return { mcp: `${issuer}${MCP_ROUTE.url}`, api: issuer };
}

/**
 * The gateway's OAuth 2.1 authorization server for agent hosts (docs/security.md, "Agents signed
 * in with OAuth"): oidc-provider, a certified implementation, with authorization code and PKCE
 * S256 only, dynamic client registration (RFC 7591), client ID metadata documents, exact
 * redirect URIs, opaque access tokens of an hour for the MCP endpoint (RFC 8707), rotating refresh
 * tokens and revocation (RFC 7009). The account a grant acts for is an API key's secret (its
 * digest): the grant's tokens work exactly while that secret does, with its key's tier, quota,
 * scopes and address rules.
 */
export async function createAuthorizationServer({
  issuer,
  store,
  secretWorks,
  allowPrivateClientMetadata,
}: AuthorizationServerOptions): Promise<Provider> {
  const { jwks, cookieKeys } = await serverKeys(store);
  const resources = protectedResources(issuer);
  const configuration: Configuration = {
    adapter: oauthAdapter(store),
    jwks: jwks as Configuration['jwks'],
    cookies: { keys: cookieKeys },
    routes: OAUTH_ROUTES,
    // The key scopes too, so that a client may register with them (MCP clients register the
    // resource's scopes); a grant holds them for the resource and as the client's own.
    scopes: ['openid', 'offline_access', ...SCOPES],
    responseTypes: ['code'],
    pkce: { required: () => true },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      // The server's signing keys are P-256.
      id_token_signed_response_alg: 'ES256',
    },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resources.mcp,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== resources.mcp && indicator !== resources.api) {
            throw new errors.InvalidTarget(`tokens are issued for ${resources.mcp}`);
          }
          return {
            // The MCP endpoint needs only to read the catalog; the API as a whole, any scope.
            scope: indicator === resources.mcp ? 'catalog:read' : SCOPES.join(' '),
            audience: indicator,
            accessTokenTTL: HOUR_S,
            accessTokenFormat: 'opaque',
          };
        },
      },
      clientIdMetadataDocument: {
        enabled: true,
        ack: 'draft-02',
        // The same rule as a webhook's URL: no private addresses, https only.
        allowFetch: async (_ctx, clientId) => {
          try {
            await checkWebhookUrl(clientId, { allowPrivate: allowPrivateClientMetadata });
            return true;
          } catch {
            return false;
          }
        },
      },
    },
    ttl: {
      AccessToken: HOUR_S,
      AuthorizationCode: 60,
      RefreshToken: 30 * DAY_S,
      Grant: 30 * DAY_S,
      Interaction: HOUR_S,
      // Tokens of a grant without offline_access end with its session: they last as long.
      Session: 30 * DAY_S,
    },
    // oidc-provider refuses private addresses on its own too (by the connection it opens): with
    // OAUTH_CLIENT_METADATA_ALLOW_PRIVATE (development and tests only) that guard is left out.
    ...(allowPrivateClientMetadata && {
      fetch: (input: string | URL | Request, init?: RequestInit) => {
        const unguarded: RequestInit & { dispatcher?: unknown } = { ...init };
        delete unguarded.dispatcher;
        return globalThis.fetch(input, unguarded);
      },
    }),
    rotateRefreshToken: true,
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    interactions: { url: (_ctx, interaction) => `${CONSENT_PATH}/${interaction.uid}` },
    findAccount: async (_ctx, sub) =>
      (await secretWorks(sub)) ? { accountId: sub, claims: () => ({ sub }) } : undefined,
    // Errors that cannot go back to the client's redirect URI are JSON, as every error here.
    renderError: async (ctx, out) => {
      ctx.type = 'application/json; charset=utf-8';
      ctx.body = out;
    },
  };
  const provider = new Provider(issuer, configuration);
  // Behind an ingress: the client's scheme and address come in X-Forwarded-*.
  provider.proxy = true;
  // Koa's own answers (no such endpoint, a method it does not take) are plain text: JSON here.
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.status < 400 || ctx.response.type === 'application/json') return;
    const { status, message } = ctx;
    ctx.body = {
      error:
        status === 404 ? 'not_found' : status === 405 ? 'method_not_allowed' : 'invalid_request',
      error_description: message,
    };
    ctx.status = status;
  });
  return provider;
}

/** The scopes a grant asked for that the key may give; what it asked, or catalog:read. */
export function grantedScopes(asked: string | undefined, keyScopes: readonly Scope[] | null) {
  const wanted = (asked ?? '')
    .split(' ')
    .filter((scope): scope is Scope => (SCOPES as readonly string[]).includes(scope));
  const requested = wanted.length > 0 ? wanted : (['catalog:read'] as Scope[]);
  return keyScopes === null ? requested : requested.filter((scope) => keyScopes.includes(scope));
}
