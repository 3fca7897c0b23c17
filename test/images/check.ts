import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { GATEWAY_NODE_FLAGS } from '../../services/gateway/src/process/node-flags';
import { type Manifest, ofKind, render, repoRoot } from '../helm/helm';
import { freePort } from '../support/ports';
import { judge, moduleRecorder, productionPackages, recorded } from './modules';

/**
 * Runs the two built images as the chart runs them and checks them through the gateway: the
 * chart's uid, a read-only root filesystem, DATA_DIR on a volume, the chart's configuration;
 * a registration, keyed reads, the Free/Pro difference, the operator commands exactly as the
 * docs give them (run with `docker exec` where the docs say `kubectl exec`), the seed Job's
 * command, and SIGTERM. Also each image's size against its goals, its SBOM, its start-up time,
 * and that it holds exactly the packages its processes load (recorded in the containers, see
 * modules.ts). Called by scripts/images/check.sh (which starts the Docker engine and builds the
 * images) with DOCKER_HOST, GATEWAY_IMAGE, CATALOG_IMAGE and BASE_IMAGE set, and SBOM_DIR for
 * where to write the SBOMs. Exits 1 on the first failure, with the containers' logs.
 */

const gatewayImage = required('GATEWAY_IMAGE');
const catalogImage = required('CATALOG_IMAGE');
const baseImage = required('BASE_IMAGE');
const run = randomBytes(3).toString('hex');
const work = mkdtempSync(path.join(tmpdir(), 'td-images-check-'));
const containers = { gateway: `td-check-gateway-${run}`, catalog: `td-check-catalog-${run}` };
const volumes = {
  gateway: `td-check-gateway-data-${run}`,
  catalog: `td-check-catalog-data-${run}`,
};

const packageJson = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  license: string;
  devDependencies: Record<string, string>;
};
/** Goals for each image: its own layers (above the base) and the whole image, in MB (10^6 B). */
const SIZE_GOALS_MB = { own: 80, whole: 300 };
/**
 * Goal for each image: from `docker start` to readiness (200 from /readyz). A time, not a ratio:
 * machines of one kind differ by more than the goal's margin (0.8–0.9 s on one, 1.7–2.6 s on
 * another, one build), so it is a verdict only where READY_GOAL_REQUIRED=1 says the machine is
 * the one the goal was set on; elsewhere it is printed. Not ready within 20 s always fails.
 */
const READY_GOAL_MS = 2000;
const READY_GOAL_REQUIRED = process.env.READY_GOAL_REQUIRED === '1';
/** Where the image holds its CycloneDX SBOM (the label names it). */
const SBOM_PATH = '/app/sbom.cdx.json';
/** Fields a Free key never gets (docs/api.md#the-tool-record). */
const PAID_FIELDS = [
  'keyFeatures',
  'pricingTiers',
  'integrations',
  'security',
  'pros',
  'cons',
  'limitations',
  'reviews',
  'editorsChoice',
];

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (scripts/images/check.sh sets it)`);
  return value;
}

class CheckFailed extends Error {}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new CheckFailed(message);
}

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end in the check's working directory, keeping what it printed. */
function exec(command: string, args: string[]): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Polls until the probe returns a value, for at most `seconds`. A CheckFailed from the probe
 * (a container that died, say) ends the wait at once; other errors are retried.
 */
async function until<T>(
  what: string,
  seconds: number,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      if (err instanceof CheckFailed) throw err;
      last = err;
    }
    if (Date.now() > deadline) {
      throw new CheckFailed(`no ${what} within ${seconds} s${last ? ` (${String(last)})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

const words = (text: string) => text.split(' ');

/** The chart's container security context, as `docker run` options; /tmp an emptyDir there. */
const hardened = (uid: string) =>
  words(`--read-only --user ${uid} --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges`);

async function docker(...args: string[]): Promise<string> {
  const result = await exec('docker', args);
  check(result.code === 0, `docker ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return result.stdout.trim();
}

/** A command as the docs write it: `\` continuations joined, runs of blanks made one. */
const normalize = (text: string) => text.replace(/\\\n\s*/g, ' ').replace(/[ \t]+/g, ' ');

/**
 * Runs a `kubectl exec` command from the docs in the matching container: checks the doc still
 * gives it word for word, then runs it in a shell with `docker exec [-i] <container>` in place
 * of `kubectl … exec [-i] <target>`, the shell's redirections (`< file`, `> file`) included.
 */
async function documented(doc: string, command: string): Promise<Result> {
  check(
    normalize(readFileSync(path.join(repoRoot, doc), 'utf8')).includes(command),
    `${doc} no longer gives the command \`${command}\`: bring this check in line with the docs`,
  );
  const match = /^kubectl (?:-n \S+ )?exec (-i )?(\S+) -- (.*)$/.exec(command);
  const target = match?.[2] ?? '';
  const container = /gateway|\$GW/.test(target)
    ? containers.gateway
    : /catalog/i.test(target)
      ? containers.catalog
      : undefined;
  check(match && container, `cannot tell which image runs \`${command}\``);
  return exec('bash', ['-c', `docker exec ${match[1] ?? ''}${container} ${match[3]}`]);
}

function json<T>(result: Result, what: string): T {
  check(result.code === 0, `${what} exited ${result.code}: ${result.stderr}`);
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new CheckFailed(`${what} printed no JSON on stdout: ${result.stdout}${result.stderr}`);
  }
}

// --- the chart: its configuration, uid, grace period and seed Job ---------------------------
const TOKEN = 'images-check-internal-token-0123456789';

function chart(set: string[] = []): Manifest[] {
  return render({ set: [`secrets.internalToken=${TOKEN}`, ...set] });
}

function deploymentOf(manifests: Manifest[], component: string): IDeployment {
  const found = ofKind<IDeployment>(manifests, 'Deployment').find(
    (d) => d.metadata?.labels?.['app.kubernetes.io/component'] === component,
  );
  check(found, `the chart renders no ${component} Deployment`);
  return found;
}

function configOf(manifests: Manifest[], component: string): Record<string, string> {
  const name = deploymentOf(manifests, component).spec?.template.spec?.containers[0]?.envFrom?.[0]
    ?.configMapRef?.name;
  const map = ofKind<IConfigMap>(manifests, 'ConfigMap').find((c) => c.metadata?.name === name);
  check(map?.data, `the chart renders no ConfigMap for the ${component}`);
  return map.data;
}

// --- steps ------------------------------------------------------------------------------------
const steps: { name: string; ms: number }[] = [];

async function step<T>(name: string, body: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const value = await body();
  const ms = Date.now() - started;
  steps.push({ name, ms });
  console.log(`  ok   ${name} (${(ms / 1000).toFixed(1)} s)`);
  return value;
}

async function imageFacts(image: string, title: string, command: string[]): Promise<void> {
  const [inspected] = JSON.parse(await docker('image', 'inspect', image)) as {
    Size: number;
    Config: { User: string; Env: string[]; Cmd: string[]; Labels: Record<string, string> };
  }[];
  check(inspected, `no image ${image}`);
  const { Config: config } = inspected;
  const labels = config.Labels;
  check(labels['org.opencontainers.image.title'] === title, `${image}: title label ${title}`);
  check(
    labels['org.opencontainers.image.version'] === packageJson.version,
    `${image}: version label ${labels['org.opencontainers.image.version']}, package ${packageJson.version}`,
  );
  const revision = process.env.EXPECTED_REVISION;
  if (revision) {
    check(
      labels['org.opencontainers.image.revision'] === revision,
      `${image}: revision label ${labels['org.opencontainers.image.revision']}, expected ${revision}`,
    );
  }
  check(
    labels['org.opencontainers.image.base.name'] === `docker.io/library/${baseImage}`,
    `${image}: base.name label ${labels['org.opencontainers.image.base.name']}, built on ${baseImage}`,
  );
  check(
    labels['org.opencontainers.image.licenses'] === packageJson.license,
    `${image}: licenses label ${labels['org.opencontainers.image.licenses']}, package ${packageJson.license}`,
  );
  for (const [label, expected] of [
    ['source', process.env.EXPECTED_SOURCE],
    ['created', process.env.EXPECTED_CREATED],
    ['base.digest', process.env.EXPECTED_BASE_DIGEST],
  ] as const) {
    const value = labels[`org.opencontainers.image.${label}`];
    check(
      value !== undefined && (expected === undefined || value === expected),
      `${image}: ${label} label ${value}, expected ${expected}`,
    );
  }
  check(labels['dev.tool-directory.sbom'] === SBOM_PATH, `${image}: no SBOM label`);
  check(config.User === '1000:1000', `${image} runs as ${config.User || 'root'}, not 1000:1000`);
  check(JSON.stringify(config.Cmd) === JSON.stringify(command), `${image}: CMD ${config.Cmd}`);
  check(
    !config.Env.some((e) => e.startsWith('NODE_EXTRA_CA_CERTS=')),
    `${image} sets NODE_EXTRA_CA_CERTS: the build's CA bundle leaked into the runtime stage`,
  );
  // What the runtime stage must not hold: a compiler, the build's CA bundle, the sources.
  const inside = await docker(
    ...words('run --rm --network none --entrypoint sh'),
    image,
    '-c',
    'node -v; for c in cc gcc g++ make python3; do command -v $c; done; ls -A /app',
  );
  const [nodeVersion, ...rest] = inside.split('\n');
  check(
    nodeVersion === `v${packageJson.devDependencies.node}`,
    `${image} runs Node ${nodeVersion}; the suite runs on the pinned v${packageJson.devDependencies.node}`,
  );
  const compilers = rest.filter((line) => line.startsWith('/'));
  check(compilers.length === 0, `${image} holds build tools: ${compilers.join(', ')}`);
  const files = rest.filter((line) => !line.startsWith('/')).sort();
  check(
    JSON.stringify(files) ===
      JSON.stringify(['dist', 'node_modules', 'package.json', path.basename(SBOM_PATH)]),
    `${image}: /app holds ${files.join(', ')}`,
  );
  // The operators' CLI on PATH, root's and read-only for the image's user, who runs it.
  const bin = await docker(
    ...words('run --rm --network none --entrypoint sh'),
    image,
    '-c',
    'command -v tool-directory; stat -c "%U %a" /usr/local/bin/tool-directory; stat -L -c "%U %a" /usr/local/bin/tool-directory; tool-directory --help | head -1',
  );
  check(
    bin ===
      [
        '/usr/local/bin/tool-directory',
        'root 777',
        'root 755',
        'Usage: tool-directory <command>',
      ].join('\n'),
    `${image}: tool-directory on PATH: ${bin}`,
  );
  console.log(`       ${image}: Node ${nodeVersion}`);
}

/** The image's size and its own layers' (the image less its base), in MB. */
async function sizes(image: string): Promise<{ whole: number; own: number }> {
  const size = async (name: string) =>
    Number(await docker('image', 'inspect', '-f', '{{.Size}}', name));
  const whole = await size(image);
  return { whole: whole / 1e6, own: (whole - (await size(baseImage))) / 1e6 };
}

/** The top-level packages of the image's /app/node_modules (`@scope/name` for scoped ones). */
async function carriedPackages(image: string): Promise<string[]> {
  const listed = await docker(
    ...words('run --rm --network none --entrypoint sh -w /app/node_modules'),
    image,
    '-c',
    'for p in * @*/*; do [ -d "$p" ] && case "$p" in @*/*|[!@]*) echo "$p";; esac; done',
  );
  return listed.split('\n').filter(Boolean).sort();
}

interface Bom {
  bomFormat: string;
  specVersion: string;
  metadata: { component?: { name: string; version: string } };
  components: { name: string; group?: string; version: string; purl?: string }[];
}

/**
 * The SBOM the image holds: CycloneDX, naming the application and every top-level package the
 * image carries (at its installed version); written to SBOM_DIR for publishing with the chart.
 */
async function sbomOf(image: string, title: string): Promise<number> {
  const text = await docker(...words('run --rm --network none --entrypoint cat'), image, SBOM_PATH);
  const bom = JSON.parse(text) as Bom;
  check(bom.bomFormat === 'CycloneDX', `${image}: ${SBOM_PATH} is not a CycloneDX document`);
  check(
    bom.metadata.component?.name === packageJson.name &&
      bom.metadata.component.version === packageJson.version,
    `${image}: the SBOM describes ${bom.metadata.component?.name}@${bom.metadata.component?.version}`,
  );
  const listed = new Set(bom.components.map((c) => (c.group ? `${c.group}/${c.name}` : c.name)));
  const carried = await carriedPackages(image);
  const unlisted = carried.filter((name) => !listed.has(name));
  check(unlisted.length === 0, `${image}: packages missing from its SBOM: ${unlisted.join(', ')}`);
  const versions = await docker(
    ...words('run --rm --network none --entrypoint node -w /app/node_modules'),
    image,
    '-e',
    'for (const p of process.argv.slice(1)) console.log(p + "@" + require("./" + p + "/package.json").version)',
    ...carried,
  );
  const inBom = new Set(
    bom.components.map((c) => `${c.group ? `${c.group}/${c.name}` : c.name}@${c.version}`),
  );
  const wrong = versions.split('\n').filter((v) => !inBom.has(v));
  check(
    wrong.length === 0,
    `${image}: SBOM versions differ from the installed: ${wrong.join(', ')}`,
  );
  const out = process.env.SBOM_DIR;
  if (out) {
    mkdirSync(out, { recursive: true });
    writeFileSync(path.join(out, `${title}-${packageJson.version}.cdx.json`), text);
  }
  return bom.components.length;
}

async function startContainer(
  name: string,
  image: string,
  volume: string,
  uid: string,
  env: Record<string, string>,
  { extra = [], start = true }: { extra?: string[]; start?: boolean } = {},
): Promise<void> {
  const envArgs = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
  await docker('volume', 'create', volume);
  await docker(
    ...words(`${start ? 'run -d' : 'create'} --name ${name} --network host`),
    ...hardened(uid),
    ...words(`-v ${volume}:/data`),
    ...envArgs,
    ...extra,
    image,
  );
}

/** Starts a created container and times it to its first 200 from `url`. */
async function timeToReady(name: string, url: string): Promise<number> {
  const started = performance.now();
  await docker('start', name);
  for (;;) {
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false,
    );
    const ms = performance.now() - started;
    if (ok) return ms;
    if (ms > 20_000) {
      throw new CheckFailed(`${name}: not ready within 20 s (${await evidence(name)})`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** How a container ended or stands, with its last log lines: the evidence for a failure. */
async function evidence(name: string): Promise<string> {
  const state = await exec('docker', [
    ...words('inspect -f'),
    '{{.State.Status}} exit {{.State.ExitCode}}',
    name,
  ]);
  if (state.code !== 0) return ''; // never started
  const logs = await exec('docker', ['logs', '--tail', '30', name]);
  return `--- ${name}: ${state.stdout.trim()}\n${logs.stdout}${logs.stderr}`;
}

async function main(): Promise<void> {
  const started = Date.now();
  console.log(`Image check: ${gatewayImage} and ${catalogImage}`);

  await step(
    'images: labels, uid 1000, CMD, pinned Node, /app only, tool-directory on PATH, no compiler or CA',
    async () => {
      await imageFacts(gatewayImage, 'tool-directory-gateway', [
        'node',
        ...GATEWAY_NODE_FLAGS,
        'dist/services/gateway/src/server.js',
      ]);
      await imageFacts(catalogImage, 'tool-directory-catalog', [
        'node',
        'dist/services/catalog/src/server.js',
      ]);
    },
  );

  await step(
    `sizes: each image's own layers ≤ ${SIZE_GOALS_MB.own} MB, the whole ≤ ${SIZE_GOALS_MB.whole} MB (on ${baseImage})`,
    async () => {
      const over: string[] = [];
      for (const image of [gatewayImage, catalogImage]) {
        const { own, whole } = await sizes(image);
        console.log(
          `       ${image}: own layers ${own.toFixed(1)} MB, whole image ${whole.toFixed(1)} MB`,
        );
        if (own > SIZE_GOALS_MB.own) over.push(`${image}: own layers ${own.toFixed(1)} MB`);
        if (whole > SIZE_GOALS_MB.whole) over.push(`${image}: whole ${whole.toFixed(1)} MB`);
      }
      check(over.length === 0, `over the size goals: ${over.join('; ')}`);
    },
  );

  await step(`SBOMs: CycloneDX at ${SBOM_PATH}, every package carried listed`, async () => {
    for (const [image, title] of [
      [gatewayImage, 'tool-directory-gateway'],
      [catalogImage, 'tool-directory-catalog'],
    ] as const) {
      const components = await sbomOf(image, title);
      console.log(`       ${image}: ${components} components`);
    }
    if (process.env.SBOM_DIR) console.log(`       written to ${process.env.SBOM_DIR}`);
  });

  // The chart without MongoDB: the embedded mode, one replica per service, DATA_DIR on a volume.
  const embedded = chart();
  const pod = deploymentOf(embedded, 'gateway').spec?.template.spec;
  const uid = `${pod?.securityContext?.runAsUser}:${pod?.securityContext?.runAsGroup}`;
  const grace = pod?.terminationGracePeriodSeconds ?? 30;
  const preStop = pod?.containers[0]?.lifecycle?.preStop?.sleep?.seconds ?? 0;

  const [port, metricsPort, catalogPort, catalogMetricsPort] = await Promise.all(
    [0, 1, 2, 3].map(() => freePort()),
  );
  const base = `http://127.0.0.1:${port}`;
  const local = { HOST: '127.0.0.1', INTERNAL_TOKEN: TOKEN };
  const gatewayEnv = {
    ...configOf(embedded, 'gateway'),
    ...local,
    PORT: String(port),
    METRICS_PORT: String(metricsPort),
    CATALOG_URL: `http://127.0.0.1:${catalogPort}`,
    PUBLIC_URL: base,
  };
  const catalogEnv = {
    ...configOf(embedded, 'catalog'),
    ...local,
    CATALOG_PORT: String(catalogPort),
    METRICS_PORT: String(catalogMetricsPort),
  };

  await step(
    `start-up: each image ready (200 from /readyz), timed from docker start against the ${READY_GOAL_MS / 1000} s goal`,
    async () => {
      // Fresh containers and volumes, as a new pod starts: the catalog first (the gateway's
      // readiness includes its catalog's), then the gateway. Timed from `docker start`.
      const timed: string[] = [];
      try {
        await startContainer(containers.catalog, catalogImage, volumes.catalog, uid, catalogEnv, {
          start: false,
        });
        await startContainer(containers.gateway, gatewayImage, volumes.gateway, uid, gatewayEnv, {
          start: false,
        });
        const ms = {
          [catalogImage]: await timeToReady(
            containers.catalog,
            `http://127.0.0.1:${catalogPort}/readyz`,
          ),
          [gatewayImage]: await timeToReady(containers.gateway, `${base}/readyz`),
        };
        for (const [image, took] of Object.entries(ms)) {
          console.log(`       ${image}: ready in ${(took / 1000).toFixed(2)} s`);
          if (took > READY_GOAL_MS) timed.push(`${image} ${(took / 1000).toFixed(2)} s`);
        }
      } finally {
        await exec('docker', ['rm', '-f', ...Object.values(containers)]);
        await exec('docker', ['volume', 'rm', '-f', ...Object.values(volumes)]);
      }
      const slower = `slower to ready than ${READY_GOAL_MS / 1000} s: ${timed.join(', ')}`;
      if (READY_GOAL_REQUIRED) check(timed.length === 0, slower);
      else if (timed.length > 0)
        console.log(`       goal not met here (READY_GOAL_REQUIRED unset): ${slower}`);
    },
  );

  // From here on every process in the containers records the modules it loads.
  const recorders = {
    gateway: moduleRecorder(path.join(work, 'modules', 'gateway')),
    catalog: moduleRecorder(path.join(work, 'modules', 'catalog')),
  };
  await step(
    `both containers ready (--user ${uid}, --read-only, the chart's configuration)`,
    async () => {
      await startContainer(containers.catalog, catalogImage, volumes.catalog, uid, catalogEnv, {
        extra: recorders.catalog.dockerArgs,
      });
      await startContainer(containers.gateway, gatewayImage, volumes.gateway, uid, gatewayEnv, {
        extra: recorders.gateway.dockerArgs,
      });
      await until('ready gateway with the catalog behind it', 60, async () => {
        for (const name of Object.values(containers)) {
          const status = await docker('inspect', '-f', '{{.State.Status}}', name);
          if (status !== 'running') throw new CheckFailed(`${name} is ${status}`);
        }
        return (await fetch(`${base}/readyz`)).ok ? true : undefined;
      });
    },
  );

  await step('node is PID 1 in both, the root filesystem read-only, DATA_DIR written', async () => {
    for (const [name, file] of [
      [containers.gateway, 'keys.db'],
      [containers.catalog, 'catalog.db'],
    ] as const) {
      const cmdline = await docker('exec', name, 'cat', '/proc/1/cmdline');
      check(cmdline.split('\0')[0] === 'node', `${name}: PID 1 is ${cmdline.replace(/\0/g, ' ')}`);
      const write = await exec('docker', ['exec', name, 'touch', '/app/written']);
      check(write.code !== 0, `${name}: /app is writable`);
      const data = await docker('exec', name, 'ls', '/data');
      check(data.split('\n').includes(file), `${name}: /data holds ${data.replace(/\n/g, ' ')}`);
    }
  });

  const registration = await step('a registration through the gateway: a Free key', async () => {
    const response = await fetch(`${base}/v1/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `images-${run}@example.com`, name: 'Images', useCase: 'CI' }),
    });
    check(response.status === 201, `POST /v1/register answered ${response.status}`);
    const body = (await response.json()) as { apiKey: string; tier: string };
    check(body.tier === 'free' && body.apiKey, `registration returned ${JSON.stringify(body)}`);
    return body;
  });

  const read = async (slug: string, apiKey: string) => {
    const response = await fetch(`${base}/v1/tools/${slug}`, { headers: { 'x-api-key': apiKey } });
    const body =
      response.status === 200
        ? ((await response.json()) as { data: Record<string, unknown> })
        : undefined;
    return { response, data: body?.data };
  };

  await step('a keyed read with the Free key: no paid field, quota headers', async () => {
    const { response, data } = await read('langchain', registration.apiKey);
    check(data?.slug === 'langchain', `GET /v1/tools/langchain answered ${response.status}`);
    const present = PAID_FIELDS.filter((f) => f in data);
    check(present.length === 0, `a Free read carries paid fields: ${present.join(', ')}`);
    check(response.headers.get('x-ratelimit-limit') === '100', 'no X-RateLimit-Limit: 100 header');
  });

  const pro = await step(
    'keys create, in the gateway image, as docs/deploy.md gives it',
    async () =>
      json<{ apiKey: string; tier: string; dailyLimit: number }>(
        await documented(
          'docs/deploy.md',
          'kubectl -n tool-directory exec deploy/tool-directory-gateway -- tool-directory keys create --tier pro --email ops@example.com --name "Acme"',
        ),
        'tool-directory keys create',
      ),
  );

  await step(
    'the Pro key (made by the CLI) reads the paid fields and compares; Free may not',
    async () => {
      check(pro.tier === 'pro', `keys create made a ${pro.tier} key`);
      const quota = Number(configOf(embedded, 'gateway').QUOTA_PRO);
      check(pro.dailyLimit === quota, `keys create printed dailyLimit ${pro.dailyLimit}`);
      const { data } = await until('gateway accepting the key the CLI made', 10, async () => {
        const result = await read('langchain', pro.apiKey);
        return result.data ? result : undefined;
      });
      const missing = PAID_FIELDS.filter((f) => !(data && f in data));
      check(missing.length === 0, `a Pro read lacks paid fields: ${missing.join(', ')}`);
      const compare = (key: string) =>
        fetch(`${base}/v1/compare/langchain/llamaindex`, { headers: { 'x-api-key': key } });
      check((await compare(pro.apiKey)).status === 200, 'a Pro key may not compare');
      check((await compare(registration.apiKey)).status === 403, 'a Free key may compare');
    },
  );

  await step('MCP (initialize, search_tools) and REST search with the Pro key', async () => {
    const mcp = (body: object) =>
      fetch(`${base}/v1/mcp`, {
        method: 'POST',
        headers: {
          'x-api-key': pro.apiKey,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...body }),
      });
    const initialized = await mcp({
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'images-check', version: '1.0.0' },
      },
    });
    check(initialized.status === 200, `MCP initialize answered ${initialized.status}`);
    const called = await mcp({
      method: 'tools/call',
      params: { name: 'search_tools', arguments: { q: 'vector database' } },
    });
    const result = (await called.json()) as { result?: { structuredContent?: unknown } };
    check(called.status === 200 && result.result, `MCP search_tools: ${JSON.stringify(result)}`);
    const searched = await fetch(`${base}/v1/search?q=langchian`, {
      headers: { 'x-api-key': pro.apiKey },
    });
    check(searched.status === 200, `GET /v1/search answered ${searched.status}`);
  });

  await step('keys list, as docs/deploy.md gives it', async () => {
    const listed = json<{ email: string }[]>(
      await documented(
        'docs/deploy.md',
        'kubectl -n tool-directory exec deploy/tool-directory-gateway -- tool-directory keys list',
      ),
      'tool-directory keys list',
    );
    const emails = listed.map((k) => k.email);
    check(
      emails.includes('ops@example.com') && emails.includes(`images-${run}@example.com`),
      `keys list shows ${emails.join(', ')}`,
    );
  });

  // A tool the catalog does not hold, made from a bundled record.
  const [sample] = JSON.parse(
    readFileSync(
      path.join(repoRoot, 'services/catalog/data/tools/writing-productivity.json'),
      'utf8',
    ),
  ) as Record<string, unknown>[];
  const zephyr = { ...sample, name: 'Zephyr Notes', slug: 'zephyr-notes' };
  const untilTool = (what: string, probe: (r: Awaited<ReturnType<typeof read>>) => boolean) =>
    until(what, 10, async () => (probe(await read('zephyr-notes', pro.apiKey)) ? true : undefined));

  await step('catalog import of a file copied to /tmp, as docs/deploy.md gives it', async () => {
    writeFileSync(path.join(work, 'tools.ndjson'), `${JSON.stringify(zephyr)}\n`);
    const copied = await documented(
      'docs/deploy.md',
      "kubectl -n tool-directory exec -i deploy/tool-directory-catalog -- sh -c 'cat > /tmp/tools.ndjson' < tools.ndjson",
    );
    check(copied.code === 0, `copying tools.ndjson into /tmp failed: ${copied.stderr}`);
    const summary = json<{ created: string[] }>(
      await documented(
        'docs/deploy.md',
        'kubectl -n tool-directory exec deploy/tool-directory-catalog -- tool-directory catalog import /tmp/tools.ndjson',
      ),
      'tool-directory catalog import /tmp/tools.ndjson',
    );
    check(
      JSON.stringify(summary.created) === '["zephyr-notes"]',
      `import: ${JSON.stringify(summary)}`,
    );
    await untilTool('imported tool through the gateway', (r) => r.data?.name === 'Zephyr Notes');
  });

  await step('catalog import from stdin, as docs/operations.md gives it', async () => {
    writeFileSync(
      path.join(work, 'tools.ndjson'),
      `${JSON.stringify({ ...zephyr, pricing: 'Free' })}\n`,
    );
    const summary = json<{ updated: { slug: string; changedFields: string[] }[] }>(
      await documented(
        'docs/operations.md',
        'kubectl -n $NS exec -i $CATALOG -- tool-directory catalog import /dev/stdin < tools.ndjson',
      ),
      'tool-directory catalog import /dev/stdin',
    );
    check(summary.updated[0]?.slug === 'zephyr-notes', `import: ${JSON.stringify(summary)}`);
    await untilTool('change through the gateway', (r) => r.data?.pricing === 'Free');
  });

  await step('catalog export to a file and delete, as docs/operations.md gives them', async () => {
    const exported = await documented(
      'docs/operations.md',
      'kubectl -n $NS exec $CATALOG -- tool-directory catalog export --format json > before.json',
    );
    check(exported.code === 0, `export exited ${exported.code}: ${exported.stderr}`);
    const before = JSON.parse(readFileSync(path.join(work, 'before.json'), 'utf8')) as {
      data: { slug: string }[];
      meta: { total: number };
    };
    check(
      before.meta.total === before.data.length &&
        before.data.some((t) => t.slug === 'zephyr-notes'),
      `before.json: ${before.meta.total} tools, zephyr-notes ${before.data.some((t) => t.slug === 'zephyr-notes') ? 'in' : 'missing'}`,
    );
    const deleted = json<{ deleted: string[] }>(
      await documented(
        'docs/operations.md',
        'kubectl -n $NS exec $CATALOG -- tool-directory catalog delete zephyr-notes',
      ),
      'tool-directory catalog delete zephyr-notes',
    );
    check(deleted.deleted[0] === 'zephyr-notes', `delete: ${JSON.stringify(deleted)}`);
    await untilTool(
      '404 for the deleted tool through the gateway',
      (r) => r.response.status === 404,
    );
  });

  await step(
    "the chart's seed Job command in the catalog image, to its MongoDB connection",
    async () => {
      const job = ofKind<IJob>(chart(['externalMongodb.url=mongodb://mongodb:27017']), 'Job').find(
        (j) => j.metadata?.labels?.['app.kubernetes.io/component'] === 'seed',
      );
      const [entrypoint, ...args] = job?.spec?.template.spec?.containers[0]?.command ?? [];
      check(entrypoint, 'the chart renders no seed Job command');
      // No MongoDB can run on this machine: the command runs to its connection, which is refused.
      const unreachable = `mongodb://127.0.0.1:${await freePort()}/?replicaSet=rs0&serverSelectionTimeoutMS=2000`;
      const seeded = await exec('docker', [
        ...words('run --rm --network host'),
        ...hardened(uid),
        ...recorders.catalog.dockerArgs,
        ...words(`-e MONGODB_URI=${unreachable} --entrypoint ${entrypoint}`),
        catalogImage,
        ...args,
      ]);
      check(
        seeded.code === 1 && /ECONNREFUSED|Server selection timed out/.test(seeded.stderr),
        `\`${[entrypoint, ...args].join(' ')}\` exited ${seeded.code}, expected 1 with a refused connection: ${seeded.stderr}`,
      );
      console.log(
        `       no MongoDB here: \`${[entrypoint, ...args].join(' ')}\` ran to its MongoDB connection, refused`,
      );
      const help = await exec('docker', [
        ...words(`run --rm --network none ${catalogImage} tool-directory seed --help`),
      ]);
      check(
        help.code === 0 && help.stdout.includes('MONGODB_URI'),
        `tool-directory seed --help: ${help.stderr}`,
      );
    },
  );

  await step("the images' HEALTHCHECK reports both healthy (compose waits on it)", async () => {
    // The first probe runs one interval (15 s) after the start.
    await until('two passing health checks', 30, async () => {
      const states = await Promise.all(
        Object.values(containers).map(async (name) => {
          const [health] = JSON.parse(
            `[${await docker('inspect', '-f', '{{json .State.Health}}', name)}]`,
          ) as { Status: string; Log: { ExitCode: number; Output: string }[] }[];
          const last = health?.Log.at(-1);
          if (health?.Status === 'unhealthy' || last?.ExitCode) {
            throw new CheckFailed(
              `${name}: health check exited ${last?.ExitCode}: ${last?.Output}`,
            );
          }
          return health?.Status;
        }),
      );
      return states.every((state) => state === 'healthy') ? true : undefined;
    });
  });

  await step(
    `SIGTERM: both drain and exit 0 within the chart's grace (${grace - preStop} s after preStop)`,
    async () => {
      const stopped = Date.now();
      await docker('kill', '--signal', 'TERM', containers.gateway, containers.catalog);
      await until("503 from the draining gateway's /readyz", 3, async () =>
        (await fetch(`${base}/readyz`)).status === 503 ? true : undefined,
      );
      const codes = await Promise.all(
        Object.values(containers).map(async (name) => {
          const result = await Promise.race([
            exec('docker', ['wait', name]),
            new Promise<undefined>((r) =>
              setTimeout(() => r(undefined), (grace - preStop) * 1000).unref(),
            ),
          ]);
          return `${name}: ${result ? result.stdout.trim() : 'still running'}`;
        }),
      );
      check(
        codes.every((c) => c.endsWith(': 0')),
        `after SIGTERM: ${codes.join(', ')}`,
      );
      console.log(
        `       both exited 0 after ${((Date.now() - stopped) / 1000).toFixed(1)} s (SHUTDOWN_DELAY_MS ${configOf(embedded, 'gateway').SHUTDOWN_DELAY_MS})`,
      );
    },
  );

  await step(
    'configurations beyond the defaults: MongoDB through a SOCKS5 proxy (the CLIs), OTLP/gRPC tracing (both servers)',
    async () => {
      // What production configurations load beyond the embedded defaults: the MongoDB driver's
      // proxy support (loaded once the proxy answers; this one then hangs up, so the commands
      // fail) and the gRPC exporter (loaded at the first export; nothing listens for it).
      const proxy = createServer((socket) => socket.once('data', () => socket.destroy()));
      await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
      const proxyPort = (proxy.address() as AddressInfo).port;
      const viaProxy = `MONGODB_URI=mongodb://127.0.0.1:${await freePort()}/?proxyHost=127.0.0.1&proxyPort=${proxyPort}&serverSelectionTimeoutMS=2000`;
      try {
        for (const [name, image, command] of [
          ['gateway', gatewayImage, 'tool-directory keys list'],
          ['catalog', catalogImage, 'tool-directory seed'],
        ] as const) {
          const result = await exec('docker', [
            ...words('run --rm --network host'),
            ...hardened(uid),
            ...recorders[name].dockerArgs,
            '-e',
            viaProxy,
            image,
            ...words(command),
          ]);
          check(result.code !== 0, `${command} through a proxy that hangs up exited 0`);
        }
      } finally {
        proxy.close();
      }

      const [otlp, p1, p2, p3, p4] = await Promise.all([0, 1, 2, 3, 4].map(() => freePort()));
      const traced = {
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlp}`,
        OTEL_BSP_SCHEDULE_DELAY: '100',
      };
      const names = {
        gateway: `td-check-gateway-traced-${run}`,
        catalog: `td-check-catalog-traced-${run}`,
      };
      const tracedVolumes = Object.values(names).map((n) => `${n}-data`);
      const gatewayUrl = `http://127.0.0.1:${p1}`;
      try {
        await startContainer(
          names.catalog,
          catalogImage,
          tracedVolumes[1]!,
          uid,
          {
            ...catalogEnv,
            ...traced,
            CATALOG_PORT: String(p3),
            METRICS_PORT: String(p4),
          },
          { extra: recorders.catalog.dockerArgs },
        );
        await startContainer(
          names.gateway,
          gatewayImage,
          tracedVolumes[0]!,
          uid,
          {
            ...gatewayEnv,
            ...traced,
            PORT: String(p1),
            METRICS_PORT: String(p2),
            CATALOG_URL: `http://127.0.0.1:${p3}`,
            PUBLIC_URL: gatewayUrl,
          },
          { extra: recorders.gateway.dockerArgs },
        );
        await until('the traced gateway ready', 20, async () =>
          (await fetch(`${gatewayUrl}/readyz`)).ok ? true : undefined,
        );
        const registered = await fetch(`${gatewayUrl}/v1/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            email: `traced-${run}@example.com`,
            name: 'Traced',
            useCase: 'CI',
          }),
        });
        const { apiKey } = (await registered.json()) as { apiKey: string };
        const traced200 = await fetch(`${gatewayUrl}/v1/tools/langchain`, {
          headers: { 'x-api-key': apiKey },
        });
        check(traced200.status === 200, `a traced keyed read answered ${traced200.status}`);
        await until('both servers to load the proxy and gRPC modules', 20, async () => {
          const loaded = (['gateway', 'catalog'] as const).map((name) =>
            recorded(path.join(work, 'modules', name)).flatMap((p) => [...p.packages]),
          );
          return loaded.every((l) => l.includes('socks') && l.includes('@grpc/grpc-js'))
            ? true
            : undefined;
        });
      } finally {
        await exec('docker', ['rm', '-f', ...Object.values(names)]);
        await exec('docker', ['volume', 'rm', '-f', ...tracedVolumes]);
      }
    },
  );

  await step(
    'modules: each image holds every package its processes load; none that no process loads',
    async () => {
      const production = productionPackages(path.join(repoRoot, 'package-lock.json'));
      const images = [
        ['gateway', gatewayImage],
        ['catalog', catalogImage],
      ] as const;
      const processes = Object.fromEntries(
        images.map(([name]) => [name, recorded(path.join(work, 'modules', name))]),
      );
      // A package both images carry counts as loaded when either image's processes load it.
      const loadedByEither = new Set(
        Object.values(processes).flatMap((list) => list.flatMap((p) => [...p.packages])),
      );
      const problems: string[] = [];
      for (const [name, image] of images) {
        const carried = await carriedPackages(image);
        const { missing, unused, loaded } = judge(carried, processes[name]!, production);
        const notLoaded = unused.filter((p) => !loadedByEither.has(p));
        console.log(
          `       ${image}: ${processes[name]!.length} processes loaded ${loaded.size} of its ${carried.length} packages; the other image loads ${unused.length - notLoaded.length} more of them`,
        );
        if (missing.length > 0) problems.push(`${image} lacks ${missing.join(', ')}`);
        if (notLoaded.length > 0) {
          problems.push(`${image} carries what no process loads: ${notLoaded.join(', ')}`);
        }
      }
      check(problems.length === 0, problems.join('; '));
    },
  );

  console.log(
    `Image check passed: ${steps.length} steps in ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
}

async function cleanUp(): Promise<void> {
  await exec('docker', ['rm', '-f', ...Object.values(containers)]);
  await exec('docker', ['volume', 'rm', '-f', ...Object.values(volumes)]);
  rmSync(work, { recursive: true, force: true });
}

main()
  .catch(async (err: unknown) => {
    console.error(
      `FAIL ${err instanceof CheckFailed ? err.message : err instanceof Error ? err.stack : err}`,
    );
    for (const name of Object.values(containers)) {
      const told = await evidence(name);
      if (told) console.error(told);
    }
    process.exitCode = 1;
  })
  .finally(cleanUp);
