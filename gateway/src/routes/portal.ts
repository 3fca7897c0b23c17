import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Tier } from '../../../services/shared/tiers';

const PORTAL_DIR = path.join(__dirname, '..', 'portal');

/** The page's own script and styles only: no inline code, no third-party origin. */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'";

/** The developer portal (`GET /`): registration form, tiers and quotas, link to the API reference. */
export async function portalRoutes(
  app: FastifyInstance,
  { quotas }: { quotas: Record<Tier, number> },
) {
  const format = (n: number) => n.toLocaleString('en-US');
  const page = readFileSync(path.join(PORTAL_DIR, 'index.html'), 'utf8')
    .replace('{{QUOTA_FREE}}', format(quotas.free))
    .replace('{{QUOTA_PRO}}', format(quotas.pro))
    .replace('{{QUOTA_ENTERPRISE}}', format(quotas.enterprise));
  const assets = {
    '/portal.js': {
      body: readFileSync(path.join(PORTAL_DIR, 'portal.js'), 'utf8'),
      type: 'text/javascript',
    },
    '/portal.css': {
      body: readFileSync(path.join(PORTAL_DIR, 'portal.css'), 'utf8'),
      type: 'text/css',
    },
  };
  const options = { schema: { hide: true }, config: { public: true } };

  app.get('/', options, async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('cache-control', 'no-cache')
      .send(page),
  );
  for (const [url, asset] of Object.entries(assets)) {
    app.get(url, options, async (_request, reply) =>
      reply
        .type(`${asset.type}; charset=utf-8`)
        .header('cache-control', 'public, max-age=300')
        .send(asset.body),
    );
  }
}
