import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { GatewayConfigSchema } from '../services/gateway/src/config';
import { GATEWAY_NODE_FLAGS } from '../services/gateway/src/process/node-flags';

/**
 * `npm start`: runs the whole system as separate processes, as in production, on embedded
 * defaults. One INTERNAL_TOKEN is generated for all of them when none is set. The two services
 * share one environment, so the ports that would collide are told apart here: METRICS_PORT is
 * the gateway's and CATALOG_METRICS_PORT the catalog's, and the gateway finds the catalog on
 * CATALOG_PORT unless CATALOG_URL says otherwise. Ctrl-C or SIGTERM stops every process (npm
 * hands its signal to this one: the script execs node); if one dies, the others are stopped too.
 *
 * It is the local development run, never production's (the images and the chart start the
 * services themselves), so one limit is loosened when unset: registrations per address and
 * hour, whose production default a developer trying the validation spends in minutes.
 */

/** Empty counts as unset, as in the services' own configuration. */
const setting = (key: string, fallback: string): string => process.env[key] || fallback;
const CATALOG_PORT = setting('CATALOG_PORT', '8081');

/** REGISTRATIONS_PER_HOUR under `npm start` when it is unset. */
const LOCAL_REGISTRATIONS_PER_HOUR = '1000';

const shared = {
  ...process.env,
  INTERNAL_TOKEN: process.env.INTERNAL_TOKEN || randomBytes(24).toString('base64url'),
};
if (!process.env.REGISTRATIONS_PER_HOUR) {
  console.log(
    `npm start: REGISTRATIONS_PER_HOUR=${LOCAL_REGISTRATIONS_PER_HOUR} for local development (the gateway's own default, as deployed, is ${GatewayConfigSchema.properties.REGISTRATIONS_PER_HOUR.default}); set it to choose`,
  );
}
interface Service {
  name: string;
  entry: string;
  env: NodeJS.ProcessEnv;
  execArgv?: string[];
  /** Started before the next service, which starts once this URL answers 200. */
  readiness?: string;
}

const SERVICES: Service[] = [
  {
    name: 'catalog',
    entry: path.join(__dirname, '..', 'services', 'catalog', 'src', 'server.js'),
    env: { ...shared, CATALOG_PORT, METRICS_PORT: setting('CATALOG_METRICS_PORT', '9465') },
    // The gateway listens once a request through it can succeed.
    readiness: `http://127.0.0.1:${CATALOG_PORT}/readyz`,
  },
  {
    name: 'gateway',
    entry: path.join(__dirname, '..', 'services', 'gateway', 'src', 'server.js'),
    execArgv: GATEWAY_NODE_FLAGS,
    env: {
      ...shared,
      METRICS_PORT: setting('METRICS_PORT', '9464'),
      CATALOG_URL: setting('CATALOG_URL', `http://127.0.0.1:${CATALOG_PORT}`),
      REGISTRATIONS_PER_HOUR: setting('REGISTRATIONS_PER_HOUR', LOCAL_REGISTRATIONS_PER_HOUR),
    },
  },
];

const children = new Map<string, ChildProcess>();
let stopping = false;

function stopAll(signal: NodeJS.Signals): void {
  if (stopping) return;
  stopping = true;
  for (const child of children.values()) child.kill(signal);
}

/** Resolves once `url` answers 200, or once the system is stopping. */
async function untilReady(url: string): Promise<void> {
  while (!stopping) {
    const ok = await fetch(url).then(
      async (response) => (await response.arrayBuffer(), response.ok),
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, READINESS_POLL_MS));
  }
}

const READINESS_POLL_MS = 50;

process.on('SIGINT', () => stopAll('SIGTERM'));
process.on('SIGTERM', () => stopAll('SIGTERM'));

/** Starts the services in order, each after the readiness of the one before. */
async function startAll(): Promise<void> {
  for (const service of SERVICES) {
    if (stopping) return;
    start(service);
    if (service.readiness) await untilReady(service.readiness);
  }
}

function start({ name, entry, env, execArgv }: Service): void {
  const child = fork(entry, { env, stdio: 'inherit', ...(execArgv && { execArgv }) });
  children.set(name, child);
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (!stopping) {
      console.error(`${name} exited (${signal ?? code}); stopping the others`);
      process.exitCode = 1;
      stopAll('SIGTERM');
    }
    if (children.size === 0) process.exit();
  });
}

void startAll();
