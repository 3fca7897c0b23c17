import type { ChildProcess } from 'node:child_process';
import { type IncomingHttpHeaders, get } from 'node:http';
import type { Redis } from 'ioredis';
import { INTERNAL_HEADERS } from '../services/shared/contract';
import { RedisServer } from '../test/support/redis-server';
import { INTERNAL_TOKEN, ServiceProcess, tempDataDir } from '../test/support/services';
import { Started, createKey, forkBenchServer, redisPidOf, startSink } from './bench-services';
import { pin } from './cpu-layout';
import { load, loadGenerator } from './load';
import {
  CONNECTIONS,
  type Measurement,
  type Target,
  layout,
  measure,
  measureRepeatedly,
  ratio,
  redisCalls,
  report,
  table,
} from './measure';
import { NGINX, startNginx, nginxVersion } from './nginx';

/**
 * The gateway in front of the catalog, with Redis, against the references of the same run:
 * the catalog answering directly, nginx proxying to it (the floor of proxying on the machine),
 * the fair peer (Fastify + @fastify/rate-limit on the same Redis + @fastify/reply-from, as their
 * READMEs show: what a Node team would build instead), the bare reference proxy (Fastify +
 * reply-from adding the internal headers, nothing else) and, on misses, the floor of a Node proxy
 * (node:http and undici, no framework). Free-tier `/v1/tools?limit=20`, each
 * target measured REPEATS times in turn; the goals as ratios; Redis commands per admitted and
 * per exhausted request; latency at a fixed rate.
 */

const PATH = '/v1/tools?limit=20';
/** What the gateway adds for a Free-tier caller, and nginx and the reference proxy too. */
const INTERNAL_FREE = { [INTERNAL_HEADERS.token]: INTERNAL_TOKEN, [INTERNAL_HEADERS.tier]: 'free' };

const T = {
  direct: 'direct catalog',
  nginx: 'nginx',
  reference: 'reference proxy',
  referenceMiss: 'reference proxy, cache missed',
  floorMiss: 'floor of a Node proxy, cache missed',
  peer: 'fair peer',
  peerMiss: 'fair peer, cache missed',
  gateway: 'gateway',
  gatewayMiss: 'gateway, cache missed',
  poll: 'gateway, conditional poll (304)',
  traced: 'gateway, tracing on',
  cacheOff: 'gateway, cache off',
  cacheOffTraced: 'gateway, cache off, tracing on',
} as const;

/**
 * Gateway targets, each with the fair peer and the reference proxy targets that forward the same
 * kind of URL.
 */
const GATEWAY_TARGETS = [
  [T.gateway, T.peer, T.reference],
  [T.gatewayMiss, T.peerMiss, T.referenceMiss],
  [T.traced, T.peer, T.reference],
  [T.cacheOff, T.peer, T.reference],
  [T.cacheOffTraced, T.peer, T.reference],
] as const;

interface GoalCheck {
  path: string;
  ratio: string;
  value: number | null;
  goal: string;
  verdict: 'PASS' | 'FAIL' | 'n/a' | 'info';
}

/** a ÷ b, or null when either is missing (no nginx) or a run had no answer. */
function divide(a: number | undefined, b: number | undefined): number | null {
  const quotient = a === undefined || b === undefined ? NaN : ratio(a, b);
  return Number.isFinite(quotient) ? quotient : null;
}

function check(
  path: string,
  name: string,
  value: number | null,
  op: '<=' | '>=' | 'info',
  limit = NaN,
): GoalCheck {
  if (op === 'info') return { path, ratio: name, value, goal: '-', verdict: 'info' };
  const met = value !== null && (op === '<=' ? value <= limit : value >= limit);
  return {
    path,
    ratio: name,
    value,
    goal: `${op === '<=' ? '≤' : '≥'} ${limit}`,
    verdict: value === null ? 'n/a' : met ? 'PASS' : 'FAIL',
  };
}

function goalChecks(results: Record<string, Measurement>): GoalCheck[] {
  const cpu = (name: string) => results[name]?.cpuMicrosPerRequest;
  const rps = (name: string) => results[name]?.requestsPerSecond;
  const hit = 'repeated read (cache hit)';
  const miss = 'cache miss (every request a URL of its own)';
  return [
    check(hit, 'gateway CPU/req ÷ nginx', divide(cpu(T.gateway), cpu(T.nginx)), '<=', 1.0),
    check(hit, 'gateway req/s ÷ nginx', divide(rps(T.gateway), rps(T.nginx)), '>=', 1.1),
    check(hit, 'gateway req/s ÷ direct catalog', divide(rps(T.gateway), rps(T.direct)), '>=', 0.5),
    check(
      'conditional poll (If-None-Match, answered 304, no unit taken)',
      'gateway CPU/req ÷ cache hit',
      divide(cpu(T.poll), cpu(T.gateway)),
      '<=',
      1.0,
    ),
    check(
      miss,
      'gateway CPU/req ÷ fair peer',
      divide(cpu(T.gatewayMiss), cpu(T.peerMiss)),
      '<=',
      0.75,
    ),
    check(
      miss,
      'gateway CPU/req ÷ bare reference proxy (no quota, no Redis call)',
      divide(cpu(T.gatewayMiss), cpu(T.referenceMiss)),
      'info',
    ),
    check(
      miss,
      'floor of a Node proxy (node:http + undici, nothing else) CPU/req ÷ fair peer',
      divide(cpu(T.floorMiss), cpu(T.peerMiss)),
      'info',
    ),
    check(
      'tracing (100 % sampled)',
      'cache on: traced ÷ untraced CPU/req',
      divide(cpu(T.traced), cpu(T.gateway)),
      '<=',
      1.5,
    ),
    check(
      'tracing (100 % sampled)',
      'cache off: traced ÷ untraced CPU/req',
      divide(cpu(T.cacheOffTraced), cpu(T.cacheOff)),
      '<=',
      1.5,
    ),
  ];
}

function printGoals(checks: GoalCheck[]): void {
  for (const path of new Set(checks.map((c) => c.path))) {
    console.log(`\nGoals, ${path}:`);
    console.table(
      Object.fromEntries(
        checks
          .filter((c) => c.path === path)
          .map((c) => [c.ratio, { ratio: c.value ?? '-', goal: c.goal, result: c.verdict }]),
      ),
    );
  }
}

/** Every gateway figure as a ratio to nginx, the fair peer, the reference proxy, the catalog. */
function versus(results: Record<string, Measurement>) {
  return Object.fromEntries(
    GATEWAY_TARGETS.map(([name, peer, reference]) => {
      const r = results[name];
      const cpuVs = (other: string) =>
        divide(r?.cpuMicrosPerRequest, results[other]?.cpuMicrosPerRequest);
      const rpsVs = (other: string) =>
        divide(r?.requestsPerSecond, results[other]?.requestsPerSecond);
      return [
        name,
        {
          'CPU/req ÷ nginx': cpuVs(T.nginx),
          'CPU/req ÷ fair peer': cpuVs(peer),
          'CPU/req ÷ reference': cpuVs(reference),
          'req/s ÷ nginx': rpsVs(T.nginx),
          'req/s ÷ fair peer': rpsVs(peer),
          'req/s ÷ reference': rpsVs(reference),
          'req/s ÷ direct': rpsVs(T.direct),
        },
      ];
    }),
  );
}

/** One answer's status and headers, as the load asks (raw HTTP, no Accept-Encoding added). */
function head(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (response) => {
      response.resume();
      response.on('end', () =>
        resolve({ status: response.statusCode!, headers: response.headers }),
      );
    }).on('error', reject);
  });
}

/** The X-Cache header of one answer, as the load asks. */
async function xCache(url: string, headers: Record<string, string>): Promise<string> {
  return String((await head(url, headers)).headers['x-cache'] ?? '(none)');
}

export async function gatewayBench() {
  const started = new Started();
  try {
    return await measureGateway(started);
  } finally {
    await started.stopAll();
  }
}

/** Starts everything the section measures; `started` stops it all, also after a failed start. */
async function startServices(started: Started) {
  const redis = started.add(await RedisServer.start(), (r) => r.stop());
  const client = started.add(redis.client(), (c) => c.disconnect());
  const dataDir = tempDataDir();
  // Before the services start: on a busy machine the keys CLI's Redis calls can time out.
  const storeEnv = { DATA_DIR: dataDir, REDIS_URL: redis.url };
  const freeKey = await createKey('free', storeEnv);
  const exhaustedKey = await createKey('pro', storeEnv);
  const stop = (service: ServiceProcess) => service.stop();
  const catalog = started.add(await ServiceProcess.start('catalog', {}), stop);
  const nginx = await startNginx(catalog.url, INTERNAL_FREE);
  if (nginx) started.add(nginx, (n) => n.stop());
  else {
    console.log(
      `\nnginx is not installed (${NGINX}): the nginx target and its ratios are skipped. ` +
        '`apt-get install nginx-light` gets it.',
    );
  }
  const gatewayEnv = {
    CATALOG_URL: catalog.url,
    REDIS_URL: redis.url,
    DATA_DIR: dataDir,
    QUOTA_FREE: '100000000',
    QUOTA_PRO: '10',
  };
  const tracing = {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await startSink()}`,
  };
  const cacheOff = { RESPONSE_CACHE: 'off' };
  // One after another: five starting at once outlast the readiness timeout on a busy machine.
  const startGateway = async (env: Record<string, string>) =>
    started.add(await ServiceProcess.start('gateway', { ...gatewayEnv, ...env }), stop);
  const gateways = {
    [T.gateway]: await startGateway({}),
    // Its own process for the misses: their evictions and garbage stay out of the hits' figures.
    [T.gatewayMiss]: await startGateway({}),
    [T.traced]: await startGateway(tracing),
    [T.cacheOff]: await startGateway(cacheOff),
    [T.cacheOffTraced]: await startGateway({ ...cacheOff, ...tracing }),
  };
  const kill = (server: { child: ChildProcess }) => server.child.kill('SIGTERM');
  const reference = started.add(
    await forkBenchServer('reference-proxy-server.ts', { CATALOG_URL: catalog.url }),
    kill,
  );
  const floor = started.add(
    await forkBenchServer('node-floor-proxy-server.ts', { CATALOG_URL: catalog.url }),
    kill,
  );
  const peer = started.add(
    await forkBenchServer('fair-peer-server.ts', {
      CATALOG_URL: catalog.url,
      REDIS_URL: redis.url,
      QUOTA_FREE: gatewayEnv.QUOTA_FREE,
    }),
    kill,
  );
  // The services' log lines are not kept in memory during load.
  for (const service of [catalog, ...Object.values(gateways)])
    service.child.stdout?.removeAllListeners('data').resume();
  if (layout) {
    const redisPid = await redisPidOf(client);
    const services = [catalog, ...Object.values(gateways)].map((s) => s.child.pid!);
    const nginxPids = nginx ? [nginx.masterPid, nginx.workerPid] : [];
    for (const pid of [
      ...services,
      ...nginxPids,
      ...[reference, floor, peer].map((s) => s.child.pid!),
      redisPid,
    ])
      pin(pid, layout.others);
  }
  return { redis, client, catalog, nginx, gateways, reference, floor, peer, freeKey, exhaustedKey };
}

async function measureGateway(started: Started) {
  const services = await startServices(started);
  const { redis, client, catalog, nginx, gateways, reference, floor, peer } = services;
  const keyHeaders = { 'x-api-key': services.freeKey };
  const atGateway = (name: keyof typeof gateways, uniqueUrls = false): Target => ({
    pid: gateways[name].child.pid!,
    url: `${gateways[name].url}${PATH}`,
    headers: keyHeaders,
    uniqueUrls,
  });
  const atReference = (uniqueUrls: boolean): Target => ({
    pid: reference.child.pid!,
    url: `${reference.url}${PATH}`,
    headers: {},
    uniqueUrls,
  });
  // The peer limits by the same API key the gateway is sent.
  const atPeer = (uniqueUrls: boolean): Target => ({
    pid: peer.child.pid!,
    url: `${peer.url}${PATH}`,
    headers: keyHeaders,
    uniqueUrls,
  });
  const gateway = gateways[T.gateway];
  // A client polling an answer it holds: the ETag of its first read, sent back each time. Read as
  // the load asks (fetch would add Accept-Encoding, whose variant has an ETag of its own), and
  // checked to be answered 304.
  const { etag } = (await head(`${gateway.url}${PATH}`, keyHeaders)).headers;
  if (typeof etag !== 'string') throw new Error(`${PATH} has no ETag: nothing to poll with`);
  const polled = await head(`${gateway.url}${PATH}`, { ...keyHeaders, 'if-none-match': etag });
  if (polled.status !== 304) throw new Error(`the poll is answered ${polled.status}, not 304`);
  const targets: Record<string, Target> = {
    [T.direct]: { pid: catalog.child.pid!, url: `${catalog.url}${PATH}`, headers: INTERNAL_FREE },
    ...(nginx && {
      [T.nginx]: { pid: nginx.workerPid, url: `${nginx.url}${PATH}`, headers: {} },
    }),
    [T.reference]: atReference(false),
    [T.referenceMiss]: atReference(true),
    [T.floorMiss]: {
      pid: floor.child.pid!,
      url: `${floor.url}${PATH}`,
      headers: {},
      uniqueUrls: true,
    },
    [T.peer]: atPeer(false),
    [T.peerMiss]: atPeer(true),
    [T.gateway]: {
      ...atGateway(T.gateway),
      quota: { redis: client, admitted: () => admittedFree(gateway) },
    },
    [T.gatewayMiss]: atGateway(T.gatewayMiss, true),
    [T.poll]: { ...atGateway(T.gateway), headers: { ...keyHeaders, 'if-none-match': etag } },
    [T.traced]: atGateway(T.traced),
    [T.cacheOff]: atGateway(T.cacheOff),
    [T.cacheOffTraced]: atGateway(T.cacheOffTraced),
  };

  const { runs, results } = await measureRepeatedly(targets);
  const xCacheSeen = await probeXCache(targets);
  const exhausted = await exhaustedKeyFigures(gateway.url, services.exhaustedKey, client);
  const redisPerRequest = {
    ...redisPerAdmittedRequest(runs[T.gateway]!),
    redisCommandsPerExhaustedRequest: exhausted.perExhaustedRequest,
    exhaustedRequests: exhausted.limited.requests,
  };
  const cpu = (name: string) => results[name]?.cpuMicrosPerRequest ?? NaN;
  const figures = {
    // Every run (each one its slices summed).
    cpuMicrosPerRequestOfEachRun: Object.fromEntries(
      Object.entries(runs).map(([name, list]) => [
        name,
        list.map((r) => r.cpuMicrosPerRequest).join(' / '),
      ]),
    ),
    tracingCpuMicrosPerRequest: {
      cacheOn: cpu(T.traced) - cpu(T.gateway),
      cacheOff: cpu(T.cacheOffTraced) - cpu(T.cacheOff),
    },
  };
  const nginxName = nginx ? nginxVersion() : null;
  const goals = goalChecks(results);
  const ratios = versus(results);

  report(
    `Gateway, Redis ${redis.url}; fair peer = Fastify + @fastify/rate-limit (Redis) + ` +
      'reply-from as documented; reference proxy = Fastify + reply-from only; ' +
      'floor = node:http + an undici pool, nothing else; ' +
      `nginx = ${nginxName ? `${nginxName}, 1 worker, keep-alive upstream` : 'not installed'}`,
    results,
  );
  console.log('\nX-Cache of one probe request per gateway target, after its runs:');
  console.table(
    Object.fromEntries(Object.entries(xCacheSeen).map(([n, v]) => [n, { 'X-Cache': v }])),
  );
  printGoals(goals);
  console.log(
    '\nEvery gateway figure ÷ nginx, ÷ the fair peer and the reference proxy on the same kind of URL ' +
      '(unique ones for "cache missed") and ÷ the direct catalog:',
  );
  console.table(ratios);
  console.log('\nRedis: commands per admitted request and per exhausted-key (429) request:');
  table({ 'exhausted key (429)': exhausted.limited });
  console.log(redisPerRequest);
  console.log(figures);

  const fixedRate = await latencyAtHalfCapacity(results, targets);
  printGoals(fixedRate.goals);
  return {
    loadGenerator,
    nginx: nginxName,
    runs,
    results,
    xCache: xCacheSeen,
    goals,
    versus: ratios,
    redis: { ...redisPerRequest, exhaustedKey: exhausted.limited },
    figures,
    fixedRate,
  };
}

/** The X-Cache of one more request to each gateway target: a new unique URL where it has them. */
async function probeXCache(targets: Record<string, Target>) {
  return Object.fromEntries(
    await Promise.all(
      GATEWAY_TARGETS.map(async ([name]) => {
        const { url, uniqueUrls, headers } = targets[name]!;
        const probe = uniqueUrls ? `${url}&n=probe-${Date.now()}` : url;
        return [name, await xCache(probe, headers)] as const;
      }),
    ),
  );
}

/** Redis commands per request the gateway admitted, over all measured runs of the target. */
function redisPerAdmittedRequest(runs: Measurement[]) {
  const total = (pick: (counts: NonNullable<Measurement['quota']>) => number) =>
    runs.reduce((sum, r) => sum + pick(r.quota!), 0);
  const admitted = total((q) => q.admitted);
  return {
    admittedRequests: admitted,
    redisCommandsSentPerAdmittedRequest: perRequest(
      total((q) => q.sent),
      admitted,
    ),
    redisCommandsExecutedPerAdmittedRequest: perRequest(
      total((q) => q.executed),
      admitted,
    ),
  };
}

const perRequest = (n: number, requests: number) => Math.round((n / requests) * 1000) / 1000;

/** Free-tier requests the gateway admitted so far, from its own metrics. */
async function admittedFree(service: ServiceProcess): Promise<number> {
  const line = /^gateway_quota_decisions_total\{[^}]*tier="free",outcome="allowed"[^}]*\} (\d+)/m;
  return Number(line.exec(await service.metrics())?.[1] ?? 0);
}

/** Redis commands the gateway runs for a request of a key whose quota is used up. */
async function exhaustedKeyFigures(gatewayUrl: string, key: string, client: Redis) {
  const url = `${gatewayUrl}/v1/categories`;
  for (let i = 0; i < 10; i++) await fetch(url, { headers: { 'x-api-key': key } });
  const before = redisCalls(await client.info('commandstats'));
  const limited = await load(url, {
    headers: { 'x-api-key': key },
    seconds: 2,
    connections: CONNECTIONS,
  });
  const after = redisCalls(await client.info('commandstats'));
  return {
    limited,
    perExhaustedRequest: perRequest(after.executed - before.executed, limited.requests),
  };
}

/**
 * p50/p99 a client sees at half the gateway's measured capacity, through the gateway and from the
 * catalog directly at the same rate: a hit (and nginx beside it) at half the hit capacity, a miss
 * (every request a URL of its own, also at the catalog) at half the miss capacity. autocannon at a
 * fixed rate, its raw latencies (wrk sets no rate). Goal: the gateway's p99 ≤ 1.2 × the catalog's.
 */
async function latencyAtHalfCapacity(
  results: Record<string, Measurement>,
  targets: Record<string, Target>,
) {
  const half = (name: string) => Math.max(1, Math.round(results[name]!.requestsPerSecond / 2));
  const direct = targets[T.direct]!;
  const kinds = {
    hit: {
      rate: half(T.gateway),
      targets: {
        gateway: targets[T.gateway]!,
        'direct catalog': direct,
        ...(targets[T.nginx] && { nginx: targets[T.nginx] }),
      },
    },
    miss: {
      rate: half(T.gatewayMiss),
      targets: {
        gateway: targets[T.gatewayMiss]!,
        'direct catalog': { ...direct, uniqueUrls: true },
      },
    },
  };
  const measured: Record<string, { rate: number; results: Record<string, Measurement> }> = {};
  const goals: GoalCheck[] = [];
  for (const [kind, { rate, targets: pair }] of Object.entries(kinds)) {
    const byName: Record<string, Measurement> = {};
    for (const [name, target] of Object.entries(pair))
      byName[name] = await measure(target, { rate });
    measured[kind] = { rate, results: byName };
    console.log(`\nLatency, ${kind}, at ${rate} req/s (half the gateway's capacity), autocannon:`);
    console.table(
      Object.fromEntries(
        Object.entries(byName).map(([name, r]) => [
          name,
          {
            'req/s': r.requestsPerSecond,
            'p50 ms': r.latencyP50Ms,
            'p99 ms': r.latencyP99Ms,
            'server CPU %': r.serverCpuPercent,
            non2xx: r.non2xx,
            errors: r.errors,
          },
        ]),
      ),
    );
    goals.push(
      check(
        `latency at half the gateway's capacity, ${kind}`,
        'p99 through the gateway ÷ the catalog directly',
        divide(byName.gateway!.latencyP99Ms, byName['direct catalog']!.latencyP99Ms),
        '<=',
        1.2,
      ),
    );
  }
  return { ...measured, goals };
}
