import { mkdirSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import path from 'node:path';
import { INTERNAL_HEADERS } from '../services/shared/contract';
import { INTERNAL_TOKEN, ServiceProcess, tempDataDir } from '../test/support/services';
import { createKey, forkBenchServer } from './bench-services';
import { analyticsBench } from './analytics-bench';
import { capacityBench } from './capacity-bench';
import { pin } from './cpu-layout';
import { gatewayBench } from './gateway-bench';
import { keyStoreBench } from './key-store-bench';
import { loadGenerator } from './load';
import { mcpBench } from './mcp-bench';
import {
  CONNECTIONS,
  type Measurement,
  REPEATS,
  SECONDS,
  type Target,
  layout,
  measureRepeatedly,
  ratio,
  report,
} from './measure';
import { searchBench } from './search-bench';

/**
 * `npm run bench`: throughput and cost figures for docs/performance.md. Needs the build
 * (`npm run build`) and redis-server on PATH; nginx and wrk from Debian where installed. Each
 * figure comes from keep-alive load (wrk, or autocannon in this process) against services in
 * their own processes. `npm run bench -- gateway` (or another section's name) runs one section.
 */

const SEARCH_QUERY = 'vector database';

async function catalogBench() {
  const { child, url: base } = await forkBenchServer('catalog-bench-server.ts');
  const headers = { [INTERNAL_HEADERS.token]: INTERNAL_TOKEN, [INTERNAL_HEADERS.tier]: 'free' };
  const target = (url: string, uniqueUrls = false): Target => ({
    pid: child.pid!,
    url: `${base}${url}`,
    headers,
    uniqueUrls,
  });
  const search = `/v1/search?q=${encodeURIComponent(SEARCH_QUERY)}`;
  try {
    const { results } = await measureRepeatedly({
      static: target('/static'),
      tools: target('/v1/tools?limit=20'),
      search: target(search),
      'tools, cache missed': target('/v1/tools?limit=20', true),
      'search, cache missed': target(search, true),
    });
    report(
      'Catalog: routes against a static-JSON route serving the same bytes, same process',
      results,
    );
    const vsStatic = (r: Measurement) =>
      ratio(r.requestsPerSecond, results.static.requestsPerSecond);
    const ratios = {
      toolsVsStatic: vsStatic(results.tools),
      searchVsStatic: vsStatic(results.search),
      toolsMissVsStatic: vsStatic(results['tools, cache missed']),
      searchMissVsStatic: vsStatic(results['search, cache missed']),
    };
    console.log(`ratio /v1/tools?limit=20 : static = ${ratios.toolsVsStatic} (goal >= 0.67)`);
    console.log(
      `ratio /v1/search?q=${SEARCH_QUERY} : static = ${ratios.searchVsStatic} (goal >= 0.67)`,
    );
    return { results, ratios };
  } finally {
    child.kill('SIGTERM');
  }
}

/** Body bytes of one answer as sent, not decoded (fetch would decode them). */
function bodyBytes(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (response) => {
      let bytes = 0;
      response.on('data', (chunk: Buffer) => (bytes += chunk.length));
      response.on('end', () => resolve(bytes));
    }).on('error', reject);
  });
}

/**
 * Compression at the catalog: the biggest page (`/v1/tools?limit=100`, Pro, from the response
 * cache) and the streamed export (Enterprise, compressed on the fly), each as identity, gzip
 * and Brotli; and the gateway relaying the page as identity and as gzip (it only streams the
 * catalog's bytes). Bytes and CPU per request of each encoding, as ratios to identity.
 */
async function compressionBench() {
  const dataDir = tempDataDir();
  const catalog = await ServiceProcess.start('catalog', {});
  const gateway = await ServiceProcess.start('gateway', {
    CATALOG_URL: catalog.url,
    DATA_DIR: dataDir,
    QUOTA_ENTERPRISE: '100000000',
  });
  for (const service of [catalog, gateway]) {
    service.child.stdout?.removeAllListeners('data').resume();
    if (layout) pin(service.child.pid!, layout.others);
  }
  const key = await createKey('enterprise', { DATA_DIR: dataDir });
  const gzip = { 'accept-encoding': 'gzip' };
  const br = { 'accept-encoding': 'br' };
  const atCatalog = (url: string, tier: string, accept = {}): Target => ({
    pid: catalog.child.pid!,
    url: `${catalog.url}${url}`,
    headers: { [INTERNAL_HEADERS.token]: INTERNAL_TOKEN, [INTERNAL_HEADERS.tier]: tier, ...accept },
  });
  const atGateway = (url: string, accept = {}): Target => ({
    pid: gateway.child.pid!,
    url: `${gateway.url}${url}`,
    headers: { 'x-api-key': key, ...accept },
  });
  const page = '/v1/tools?limit=100';
  const targets: Record<string, Target> = {
    page: atCatalog(page, 'pro'),
    'page, gzip': atCatalog(page, 'pro', gzip),
    'page, br': atCatalog(page, 'pro', br),
    export: atCatalog('/v1/export', 'enterprise'),
    'export, gzip': atCatalog('/v1/export', 'enterprise', gzip),
    'export, br': atCatalog('/v1/export', 'enterprise', br),
    'gateway page': atGateway(page),
    'gateway page, gzip': atGateway(page, gzip),
  };
  try {
    const { results } = await measureRepeatedly(targets);
    const bytes = Object.fromEntries(
      await Promise.all(
        Object.entries(targets).map(
          async ([name, t]) => [name, await bodyBytes(t.url, t.headers)] as const,
        ),
      ),
    );
    report('Compression: identity, gzip and Brotli at the catalog, through the gateway', results);
    const ratios = Object.fromEntries(
      Object.keys(targets)
        .filter((name) => name.includes(', '))
        .map((name) => {
          const identity = name.split(', ')[0]!;
          return [
            `${name} : ${identity}`,
            {
              'body bytes': `${bytes[name]} / ${bytes[identity]}`,
              'bytes ratio': ratio(bytes[name]!, bytes[identity]!),
              'CPU ratio': ratio(
                results[name]!.cpuMicrosPerRequest,
                results[identity]!.cpuMicrosPerRequest,
              ),
            },
          ];
        }),
    );
    console.table(ratios);
    return { results, bytes, ratios };
  } finally {
    await Promise.all([gateway.stop(), catalog.stop()]);
  }
}

/** The sections in the order a full run takes them; each result goes into the JSON file. */
const SECTIONS = {
  'key-store': keyStoreBench,
  search: searchBench,
  catalog: catalogBench,
  gateway: gatewayBench,
  compression: compressionBench,
  mcp: mcpBench,
  analytics: analyticsBench,
  capacity: capacityBench,
} as const;

/** The key of a section's figures in the JSON file: `keyStore` for `key-store`. */
const camelCase = (name: string) => name.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());

async function main(): Promise<void> {
  if (layout) pin(process.pid, layout.others);
  const only = process.argv[2];
  if (only && !(only in SECTIONS)) {
    console.error(`Unknown section ${only}; the sections: ${Object.keys(SECTIONS).join(', ')}`);
    process.exit(2);
  }
  const results: Record<string, unknown> = {};
  for (const [name, section] of Object.entries(SECTIONS)) {
    if (!only || only === name) results[camelCase(name)] = await section();
  }
  const out = path.join(__dirname, 'results');
  mkdirSync(out, { recursive: true });
  const file = path.join(out, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      {
        seconds: SECONDS,
        connections: CONNECTIONS,
        repeats: REPEATS,
        loadGenerator,
        layout,
        ...results,
      },
      null,
      2,
    ),
  );
  console.log(`\nResults written to ${path.relative(process.cwd(), file)}`);
  process.exit(0);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
