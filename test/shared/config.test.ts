import { loadCatalogConfig } from '../../services/catalog/src/config';
import { loadGatewayConfig, trustProxySetting } from '../../services/gateway/src/config';
import { ConfigError } from '../../services/shared/config';

describe('configuration from the environment', () => {
  test('defaults apply and strings convert to their types', () => {
    const config = loadGatewayConfig({
      INTERNAL_TOKEN: 'x'.repeat(16),
      QUOTA_PRO: '7000',
      LOG_PRETTY: 'true',
    });
    expect(config).toMatchObject({
      PORT: 8080,
      METRICS_PORT: 9464,
      CATALOG_URL: 'http://127.0.0.1:8081',
      QUOTA_FREE: 100,
      QUOTA_PRO: 7000,
      QUOTA_ENTERPRISE: 50000,
      LOG_PRETTY: true,
      CORS_ORIGINS: '*',
    });
    expect(loadCatalogConfig({ INTERNAL_TOKEN: 'x'.repeat(16) })).toMatchObject({
      CATALOG_PORT: 8081,
      METRICS_PORT: 9465,
    });
  });

  test('PUBLIC_URL, unset, names this gateway on its own port', () => {
    const token = { INTERNAL_TOKEN: 'x'.repeat(16) };
    expect(loadGatewayConfig(token).PUBLIC_URL).toBe('http://localhost:8080');
    expect(loadGatewayConfig({ ...token, PORT: '18180' }).PUBLIC_URL).toBe(
      'http://localhost:18180',
    );
    expect(
      loadGatewayConfig({ ...token, PORT: '18180', PUBLIC_URL: 'https://api.example.com' })
        .PUBLIC_URL,
    ).toBe('https://api.example.com');
  });

  test('empty values count as unset', () => {
    const config = loadGatewayConfig({ INTERNAL_TOKEN: 'x'.repeat(16), REDIS_URL: '', PORT: '' });
    expect(config.REDIS_URL).toBeUndefined();
    expect(config.PORT).toBe(8080);
  });

  test('every problem is reported at once, by variable name', () => {
    let error: unknown;
    try {
      loadGatewayConfig({ PORT: 'eighty', QUOTA_FREE: '0', LOG_LEVEL: 'loud' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    for (const name of ['INTERNAL_TOKEN', 'PORT', 'QUOTA_FREE', 'LOG_LEVEL'])
      expect(message).toContain(name);
  });

  test.each(['1e400', 'Infinity', '2.5', '1e3', '0x10', '30 per minute'])(
    'an integer setting written as %s is refused, never read as another number',
    (value) => {
      expect(() =>
        loadGatewayConfig({ INTERNAL_TOKEN: 'x'.repeat(16), INVALID_KEYS_PER_MINUTE: value }),
      ).toThrow(/INVALID_KEYS_PER_MINUTE/);
    },
  );

  test('TRUST_PROXY is a flag or a list of proxies', () => {
    expect(trustProxySetting('false')).toBe(false);
    expect(trustProxySetting('true')).toBe(true);
    expect(trustProxySetting('10.0.0.0/8, 127.0.0.1')).toEqual(['10.0.0.0/8', '127.0.0.1']);
  });

  test('WEBHOOK_ALLOW_PRIVATE is off unless set to true', () => {
    const token = { INTERNAL_TOKEN: 'x'.repeat(16) };
    expect(loadCatalogConfig(token).WEBHOOK_ALLOW_PRIVATE).toBe(false);
    expect(
      loadCatalogConfig({ ...token, WEBHOOK_ALLOW_PRIVATE: 'true' }).WEBHOOK_ALLOW_PRIVATE,
    ).toBe(true);
    expect(() => loadCatalogConfig({ ...token, WEBHOOK_ALLOW_PRIVATE: 'yes please' })).toThrow(
      /WEBHOOK_ALLOW_PRIVATE/,
    );
  });
});
