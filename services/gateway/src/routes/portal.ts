import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Tier } from '../../../shared/tiers';

const PORTAL_DIR = path.join(__dirname, '..', 'portal');

/**
 * The page's own script and styles only: no inline code, no third-party origin. No form is
 * ever submitted by the browser itself (the script sends JSON), so none may be.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

/** What the page's script swaps for the key once the visitor has one. */
const KEY_PLACEHOLDER = 'YOUR_API_KEY';

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

/** One shell word in single quotes: `?`, `&` and `*` in a URL stay literal in bash and zsh. */
const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

/** Copy-and-run examples against the public address (PUBLIC_URL, not the address asked). */
function portalExamples(publicUrl: string) {
  const url = `${publicUrl.replace(/\/$/, '')}/v1/tools?limit=3`;
  // Short lines: they fit a phone's width without scrolling far.
  return {
    curl: `curl -i ${shellQuote(url)} \\\n  -H ${shellQuote(`x-api-key: ${KEY_PLACEHOLDER}`)}`,
    js: [
      `const response = await fetch(${JSON.stringify(url)}, {`,
      `  headers: { "x-api-key": "${KEY_PLACEHOLDER}" },`,
      '});',
      'const remaining = response.headers.get("x-ratelimit-remaining");',
      'console.log(response.status, remaining);',
      'const { data, meta } = await response.json();',
      'console.log(data.map((tool) => tool.name), meta);',
    ].join('\n'),
  };
}

/** The developer portal (`GET /`): registration, examples, tiers and quotas, lost keys. */
export async function portalRoutes(
  app: FastifyInstance,
  { quotas, publicUrl }: { quotas: Record<Tier, number>; publicUrl: string },
) {
  const read = (file: string) => readFileSync(path.join(PORTAL_DIR, file), 'utf8');
  const assets = {
    '/portal.js': { body: read('portal.js'), type: 'text/javascript' },
    '/portal.css': { body: read('portal.css'), type: 'text/css' },
  };
  const format = (n: number) => n.toLocaleString('en-US');
  const examples = portalExamples(publicUrl);
  const values: Record<string, string> = {
    BASE_URL: `${publicUrl.replace(/\/$/, '')}/v1`,
    QUOTA_FREE: format(quotas.free),
    QUOTA_PRO: format(quotas.pro),
    QUOTA_ENTERPRISE: format(quotas.enterprise),
    CURL_EXAMPLE: examples.curl,
    JS_EXAMPLE: examples.js,
    // A new page never runs with the previous release's cached script or styles.
    ASSETS_VERSION: createHash('sha256')
      .update(assets['/portal.js'].body + assets['/portal.css'].body)
      .digest('hex')
      .slice(0, 12),
  };
  const page = read('index.html').replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`portal page: no value for {{${name}}}`);
    return escapeHtml(value);
  });
  const options = { schema: { hide: true }, config: { public: true } };

  app.get('/', options, async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .send(page),
  );
  for (const [url, asset] of Object.entries(assets)) {
    app.get(url, options, async (_request, reply) =>
      reply
        .type(`${asset.type}; charset=utf-8`)
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'public, max-age=300')
        .send(asset.body),
    );
  }
}
