import pino, { type Logger } from 'pino';
import {
  type GatewayInstance,
  configureGateway,
  createGatewayInstance,
} from '../../services/gateway/src/app';
import { loadGatewayConfig } from '../../services/gateway/src/config';
import { createGatewayDependencies } from '../../services/gateway/src/dependencies';
import type { Clock } from '../../services/gateway/src/quota/daily-window';
import { startWatchers } from '../../services/gateway/src/watchers';
import { INTERNAL_TOKEN, tempDataDir } from './services';

/**
 * Errors only, through `console.error`: Jest shows them under the test file, so an unexpected
 * 500 comes with its cause instead of a bare status.
 */
function testLogger() {
  return pino({ level: 'error' }, { write: (line: string) => console.error(line.trimEnd()) });
}

/**
 * A gateway's dependencies built in this process as its server builds them, before any app:
 * the key store, Redis when given, and whatever catalog CATALOG_URL names.
 */
export async function inProcessDependencies(env: Record<string, string>, clock?: Clock) {
  const config = loadGatewayConfig({
    INTERNAL_TOKEN,
    DATA_DIR: tempDataDir(),
    REGISTRATIONS_PER_HOUR: '1000',
    LOG_LEVEL: 'silent',
    ...env,
  });
  const logger = testLogger();
  const deps = await createGatewayDependencies(config, { logger, ...(clock ? { clock } : {}) });
  return { config, logger, deps };
}

/**
 * A gateway built in this process (for an injected clock or `inject`), with real dependencies:
 * the key store, Redis when given, and whatever catalog CATALOG_URL names.
 */
export async function inProcessGateway(
  env: Record<string, string>,
  clock?: Clock,
  {
    logger: appLogger,
    beforeReady,
  }: {
    /** The app's logger, for a test that reads its lines; errors to the console otherwise. */
    logger?: Logger;
    /** Hooks a test adds once every route is registered (to see which requests Fastify answers). */
    beforeReady?: (app: GatewayInstance) => void;
  } = {},
) {
  const { config, logger, deps } = await inProcessDependencies(env, clock);
  const stopWatchers = await startWatchers(deps, { config, logger });
  const app = createGatewayInstance({ config, logger: appLogger ?? logger });
  await configureGateway(app, { config, deps, logger: appLogger ?? logger });
  beforeReady?.(app);
  await app.ready();
  return {
    app,
    deps,
    close: async () => {
      await app.close();
      await stopWatchers();
      await deps.close();
    },
  };
}

export async function registerInProcess(
  app: Awaited<ReturnType<typeof inProcessGateway>>['app'],
  email: string,
) {
  const response = await app.inject({
    method: 'POST',
    url: '/v1/register',
    payload: { email, name: 'Test' },
  });
  if (response.statusCode !== 201)
    throw new Error(`register answered ${response.statusCode}: ${response.body}`);
  return response.json<{ apiKey: string }>().apiKey;
}
