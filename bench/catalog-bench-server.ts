import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { buildCatalogApp } from '../services/catalog/src/app';
import { loadDataset } from '../services/catalog/src/records/dataset';
import { EmbeddedStore } from '../services/catalog/src/store/embedded-store';
import { loggerOptions } from '../services/shared/logger';
import { createRegistry } from '../services/shared/metrics';
import { INTERNAL_HEADERS } from '../services/shared/contract';

/**
 * The catalog as in production (embedded store, JSON logs, metrics), plus `/static`: the exact
 * bytes of `/v1/tools?limit=20` served pre-serialized from the same process. The ratio of the
 * two isolates what the catalog's own work (query, schema serialization) costs.
 *
 * To see where the time goes: `CATALOG_PORT=3100 node --cpu-prof --import tsx
 * bench/catalog-bench-server.ts`, load it (internal headers, see bench/run.ts), then Ctrl-C;
 * the profile is written on that clean exit (as on the bench's SIGTERM).
 */
async function main(): Promise<void> {
  const token = process.env.INTERNAL_TOKEN ?? 'bench-internal-token-000000';
  const dataset = loadDataset();
  const logger = pino(
    loggerOptions({ service: 'catalog', level: 'info', pretty: false, traceIds: false }),
    pino.destination('/dev/null'),
  );
  const app = await buildCatalogApp({
    store: new EmbeddedStore(mkdtempSync(path.join(tmpdir(), 'bench-catalog-')), dataset.tools),
    meta: dataset.meta,
    internalToken: token,
    logger,
    registry: createRegistry('catalog'),
  });
  let staticBody = '';
  app.get('/static', { config: { public: true } }, async (_request, reply) =>
    reply.type('application/json; charset=utf-8').send(staticBody),
  );
  staticBody = (
    await app.inject({
      url: '/v1/tools?limit=20',
      headers: { [INTERNAL_HEADERS.token]: token, [INTERNAL_HEADERS.tier]: 'free' },
    })
  ).body;
  // A clean exit, so that `node --cpu-prof` writes its profile.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(0));
  await app.listen({ port: Number(process.env.CATALOG_PORT ?? 0), host: '127.0.0.1' });
  process.send?.({ port: (app.server.address() as { port: number }).port });
}

void main();
