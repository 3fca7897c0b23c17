import { inProcessGateway } from '../support/gateway';

/**
 * docs/api.md#the-system-behind-the-api, docs/api.md#authentication-errors,
 * docs/api.md#quotas-and-rate-limit-headers: browsers may call the API; a preflight needs no key.
 */
describe('CORS', () => {
  test('a preflight needs no key and allows x-api-key', async () => {
    const gateway = await inProcessGateway({ CATALOG_URL: 'http://127.0.0.1:9' });
    try {
      const response = await gateway.app.inject({
        method: 'OPTIONS',
        url: '/v1/tools',
        headers: {
          origin: 'https://app.example',
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'x-api-key',
        },
      });
      expect(response.statusCode).toBe(204);
      expect(response.headers['access-control-allow-origin']).toBe('*');
      expect(String(response.headers['access-control-allow-headers'])).toContain('x-api-key');
      expect(response.headers['x-ratelimit-remaining']).toBeUndefined();
    } finally {
      await gateway.close();
    }
  });

  test('CORS_ORIGINS restricts the allowed origins', async () => {
    const gateway = await inProcessGateway({
      CATALOG_URL: 'http://127.0.0.1:9',
      CORS_ORIGINS: 'https://good.example, https://also.example',
    });
    try {
      const preflight = (origin: string) =>
        gateway.app.inject({
          method: 'OPTIONS',
          url: '/v1/tools',
          headers: { origin, 'access-control-request-method': 'GET' },
        });
      expect((await preflight('https://good.example')).headers['access-control-allow-origin']).toBe(
        'https://good.example',
      );
      expect((await preflight('https://also.example')).headers['access-control-allow-origin']).toBe(
        'https://also.example',
      );
      expect(
        (await preflight('https://evil.example')).headers['access-control-allow-origin'],
      ).toBeUndefined();
    } finally {
      await gateway.close();
    }
  });
});
