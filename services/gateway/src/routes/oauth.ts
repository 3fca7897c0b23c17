import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import { MCP_ROUTE, SCOPES } from '../../../shared/contract';
import { Errors } from '../../../shared/errors';
import { KeyDigests } from '../keys/api-key';
import type { KeyCache } from '../keys/key-cache';
import type { KeyStore } from '../keys/key-store';
import { secretState } from '../keys/secret-lifecycle';
import {
  CONSENT_PATH,
  OAUTH_ROUTES,
  RESOURCE_METADATA_PATH,
  grantedScopes,
  protectedResources,
} from '../oauth/authorization-server';
import { clientAddress } from '../plugins/client-address';
import { CONTENT_SECURITY_POLICY } from './portal';

const PORTAL_DIR = path.join(__dirname, '..', 'portal');

/**
 * An authorization request (and its resumption) as if the browser had no session: each sign-in
 * is with the API key typed on the consent page, never one a browser's earlier sign-in left, and
 * a second key in the same browser does not meet oidc-provider's "log the other one out" step.
 */
function withoutSession(headers: IncomingHttpHeaders): void {
  const { cookie } = headers;
  if (cookie === undefined) return;
  headers.cookie = cookie
    .split(';')
    .filter((pair) => !pair.trim().startsWith('_session'))
    .join(';');
}

export interface OAuthRoutesOptions {
  provider: Provider;
  publicUrl: string;
  keyCache: KeyCache;
  keyStore: Pick<KeyStore, 'recordEvent'>;
}

const ConsentBody = Type.Object(
  {
    allow: Type.Boolean(),
    apiKey: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);

/** What oidc-provider answers an interaction it does not know (expired, finished, no cookie). */
function interactionGone(): Error {
  return new Errors.signInGone();
}

/**
 * The gateway as the MCP endpoint's authorization server and protected resource (docs/api.md,
 * "Connecting an agent host"): the resource metadata (RFC 9728), the server's metadata (RFC
 * 8414) and endpoints (oidc-provider, under /oauth), and the consent page where the person signs
 * in with an API key and allows or denies the agent.
 */
export async function oauthRoutes(app: FastifyInstance, options: OAuthRoutesOptions) {
  const { provider, publicUrl, keyCache, keyStore } = options;
  const resources = protectedResources(publicUrl);
  const digests = new KeyDigests();
  const callback = provider.callback();
  const open = { schema: { hide: true }, config: { public: true } } as const;

  // The endpoints oidc-provider names are on the public address, whatever Host a request used.
  const { host, protocol } = new URL(publicUrl);
  /** Hands the request, as it came, to oidc-provider (it reads the body itself). */
  const toProvider = async (request: FastifyRequest, reply: FastifyReply, url?: string) => {
    if (url !== undefined) request.raw.url = url;
    const { headers } = request.raw;
    headers.host = host;
    headers['x-forwarded-proto'] = protocol.slice(0, -1);
    delete headers['x-forwarded-host'];
    delete headers.forwarded;
    if (request.raw.url!.startsWith(OAUTH_ROUTES.authorization)) withoutSession(headers);
    reply.hijack();
    await callback(request.raw, reply.raw);
  };

  const resourceMetadata = (resource: string, scopes: readonly string[]) => ({
    resource,
    authorization_servers: [publicUrl],
    scopes_supported: scopes,
    bearer_methods_supported: ['header'],
    resource_name: 'Tool Directory',
    resource_documentation: `${publicUrl}/docs`,
  });
  app.get(`${RESOURCE_METADATA_PATH}${MCP_ROUTE.url}`, open, async () =>
    resourceMetadata(resources.mcp, [MCP_ROUTE.scope]),
  );
  app.get(RESOURCE_METADATA_PATH, open, async () => resourceMetadata(resources.api, SCOPES));

  await app.register(async function providerRoutes(scope) {
    // oidc-provider reads the bodies: they are left unread here.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
    scope.get('/.well-known/oauth-authorization-server', open, (request, reply) =>
      toProvider(request, reply, '/.well-known/openid-configuration'),
    );
    scope.get('/.well-known/openid-configuration', open, (request, reply) =>
      toProvider(request, reply),
    );
    scope.all('/oauth/*', open, (request, reply) => toProvider(request, reply));
  });

  const read = (file: string) => readFileSync(path.join(PORTAL_DIR, file), 'utf8');
  const page = read('consent.html');
  const script = read('consent.js');
  app.get(`${CONSENT_PATH}/:uid`, open, async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-store')
      .send(page),
  );
  app.get('/consent.js', open, async (_request, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'public, max-age=300')
      .send(script),
  );

  const details = async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      return await provider.interactionDetails(request.raw, reply.raw);
    } catch {
      throw interactionGone();
    }
  };

  /** What the agent asks, for the page to show: its name and site, the scopes, the resource. */
  app.get(`${CONSENT_PATH}/:uid/details`, open, async (request, reply) => {
    const interaction = await details(request, reply);
    const clientId = String(interaction.params.client_id);
    const client = await provider.Client.find(clientId);
    reply.header('cache-control', 'no-store');
    return {
      client: {
        id: clientId,
        name: client?.clientName ?? clientId,
        uri: client?.clientUri ?? null,
        redirectUri: String(interaction.params.redirect_uri),
      },
      scopes: grantedScopes(interaction.params.scope as string | undefined, null),
      resource: resources.mcp,
    };
  });

  app.post(
    `${CONSENT_PATH}/:uid`,
    { ...open, bodyLimit: 4096, schema: { hide: true, body: ConsentBody } },
    async (request, reply) => {
      const interaction = await details(request, reply);
      const { allow, apiKey } = request.body as { allow: boolean; apiKey?: string };
      reply.header('cache-control', 'no-store');
      if (!allow) {
        const redirectTo = await provider.interactionResult(request.raw, reply.raw, {
          error: 'access_denied',
          error_description: 'The person denied the agent access',
        });
        return { redirectTo };
      }
      const digest = apiKey === undefined ? undefined : digests.of(apiKey);
      if (digest === undefined) throw new Errors.apiKeyInvalid();
      const match = await keyCache.lookup(digest);
      if (match === null) throw new Errors.apiKeyInvalid();
      const state = secretState(match, digest, Date.now());
      if (state.kind === 'ended') throw new Errors.apiKeyInvalid();
      // Letting an agent act for the key manages it: the previous secret of a roll may not.
      if (state.kind === 'previous') throw new Errors.secretBeingReplaced(state.until);
      const { record } = match;
      const scopes = grantedScopes(interaction.params.scope as string | undefined, record.scopes);
      if (scopes.length === 0) throw new Errors.scopeMissing('catalog:read');
      const clientId = String(interaction.params.client_id);
      const grant = new provider.Grant({ accountId: digest, clientId });
      const asked = ([] as unknown[]).concat(interaction.params.resource ?? []);
      const resource = asked.find((r) => r === resources.api) ?? resources.mcp;
      grant.addResourceScope(resource as string, scopes.join(' '));
      const oidcScopes = String(interaction.params.scope ?? '').includes('offline_access')
        ? [...scopes, 'offline_access']
        : scopes;
      grant.addOIDCScope(oidcScopes.join(' '));
      const grantId = await grant.save();
      const client = await provider.Client.find(clientId);
      await keyStore.recordEvent(record.id, {
        type: 'authorized',
        at: new Date().toISOString(),
        by: 'self',
        address: clientAddress(request),
        detail: { clientId, clientName: client?.clientName ?? null, scopes },
      });
      const redirectTo = await provider.interactionResult(request.raw, reply.raw, {
        login: { accountId: digest },
        consent: { grantId },
      });
      return { redirectTo };
    },
  );
}
