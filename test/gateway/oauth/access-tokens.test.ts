import { setTimeout as sleep } from 'node:timers/promises';
import { EmbeddedKeyStore } from '../../../services/gateway/src/keys/embedded-key-store';
import { AccessTokens } from '../../../services/gateway/src/oauth/access-tokens';
import { tempDataDir } from '../../support/services';

const MCP = 'https://api.example/v1/mcp';

describe('access tokens as the MCP endpoint reads them', () => {
  const keys = new EmbeddedKeyStore(tempDataDir());
  const tokens = new AccessTokens(keys.oauth, [MCP]);
  const now = () => Math.floor(Date.now() / 1000);
  const issue = (id: string, payload: Record<string, unknown>) =>
    keys.oauth.upsert('AccessToken', id, payload, Date.now() + 3_600_000, {});
  afterAll(() => keys.close());

  test('a live token for this resource names its secret and scopes', async () => {
    await issue('good', {
      accountId: 'digest-1',
      exp: now() + 3600,
      aud: MCP,
      scope: 'catalog:read usage not-a-scope',
    });
    expect(await tokens.grantOf('good')).toEqual({
      digest: 'digest-1',
      scopes: ['catalog:read', 'usage'],
      expiresAt: expect.any(Number),
    });
  });

  test.each([
    ['expired', { accountId: 'd', exp: now() - 1, aud: MCP, scope: 'catalog:read' }],
    ['for another resource', { accountId: 'd', exp: now() + 60, aud: 'https://other.example' }],
    ['without an account', { exp: now() + 60, aud: MCP }],
  ])('a token %s is no token', async (name, payload) => {
    await issue(name, payload);
    expect(await tokens.grantOf(name)).toBeNull();
    expect(await tokens.grantOf('never-issued')).toBeNull();
  });

  test('a revoked token stops within a second of its revocation', async () => {
    await issue('revoked', { accountId: 'd', exp: now() + 60, aud: [MCP] });
    expect(await tokens.grantOf('revoked')).not.toBeNull();
    await keys.oauth.destroy('AccessToken', 'revoked');
    // What a replica read of a token it trusts for a second, then reads again.
    await sleep(1_100);
    expect(await tokens.grantOf('revoked')).toBeNull();
  });
});
