import { type ChildProcess, spawn } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GATEWAY_NODE_FLAGS } from '../../services/gateway/src/process/node-flags';
import { killOnExit } from '../support/child-processes';
import { freePort, waitFor } from '../support/ports';
import { tempDataDir } from '../support/services';
import { repoRoot, run, shellEnv } from './commands';
import { SERVICE_START_MS } from '../support/waits';

let app = '';
/** The image's /usr/local/bin: `tool-directory`, linked to package.json's bin. */
let usrLocalBin = '';

/**
 * A shell in the image: its `node` on PATH is the image's Node, the one this suite runs on (the
 * pruned tree has no `node` package, and the system's Node may be older than the images'), and
 * `tool-directory` is on PATH.
 */
function imageEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env = shellEnv(extra);
  const dirs = [usrLocalBin, path.dirname(process.execPath), env.PATH];
  return { ...env, PATH: dirs.join(path.delimiter) };
}

/**
 * The images' runtime stage holds dist/, package.json and node_modules pruned to the
 * production dependencies (the build stage's `npm prune --omit=dev`). This builds the same layout
 * in a directory and runs README's commands in it, in seconds and without a Docker engine; the
 * Dockerfile is checked as text. CI also builds and runs the images themselves
 * (scripts/images/check.sh).
 */

/** Copies a tree as hard links: instant, and the copy's removals leave the original alone. */
function linkTree(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else if (entry.isDirectory()) linkTree(source, target);
    else linkSync(source, target);
  }
}

const packageJson = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
  scripts: Record<string, string>;
  devDependencies: Record<string, string>;
};

beforeAll(async () => {
  app = mkdtempSync(path.join(tmpdir(), 'td-production-'));
  usrLocalBin = mkdtempSync(path.join(tmpdir(), 'td-usr-local-bin-'));
  symlinkSync(
    path.join(app, packageJson.bin['tool-directory']!),
    path.join(usrLocalBin, 'tool-directory'),
  );
  for (const file of ['package.json', 'package-lock.json']) {
    copyFileSync(path.join(repoRoot, file), path.join(app, file));
  }
  cpSync(path.join(repoRoot, 'dist'), path.join(app, 'dist'), { recursive: true });
  linkTree(path.join(repoRoot, 'node_modules'), path.join(app, 'node_modules'));
  // npm rewrites its hidden lockfile in place: a linked one would change the original's too.
  const hiddenLockfile = path.join('node_modules', '.package-lock.json');
  rmSync(path.join(app, hiddenLockfile));
  copyFileSync(path.join(repoRoot, hiddenLockfile), path.join(app, hiddenLockfile));
  const pruned = await run('npm', ['prune', '--omit=dev', '--no-audit', '--no-fund'], {
    cwd: app,
    env: imageEnv(),
  });
  if (pruned.code !== 0) throw new Error(`npm prune failed: ${pruned.stderr}`);
}, 120_000);

afterAll(() => {
  for (const dir of [app, usrLocalBin]) if (dir) rmSync(dir, { recursive: true, force: true });
});

test('holds the production dependencies only', () => {
  const installed = (name: string) => existsSync(path.join(app, 'node_modules', name));
  expect(['tsx', 'typescript', 'jest', 'pino-pretty'].filter(installed)).toEqual([]);
  expect(['fastify', 'better-sqlite3', 'pino'].filter(installed)).toEqual([
    'fastify',
    'better-sqlite3',
    'pino',
  ]);
});

test('tool-directory works and prints bare JSON', async () => {
  const env = imageEnv({ DATA_DIR: tempDataDir() });
  const created = await run(
    'tool-directory',
    ['keys', 'create', '--tier', 'pro', '--email', 'ops@example.com', '--name', 'Ops'],
    { cwd: app, env },
  );
  expect(created).toMatchObject({ code: 0 });
  expect(JSON.parse(created.stdout)).toMatchObject({ tier: 'pro', email: 'ops@example.com' });

  const listed = await run('tool-directory', ['keys', 'list'], { cwd: app, env });
  expect(listed).toMatchObject({ code: 0 });
  expect(JSON.stringify(JSON.parse(listed.stdout))).toContain('ops@example.com');
});

test('npm run seed, an alias of tool-directory seed, works (its help, as there is no MongoDB here)', async () => {
  const result = await run('npm', ['run', 'seed', '--', '--help'], { cwd: app, env: imageEnv() });
  expect(result).toMatchObject({ code: 0 });
  expect(result.stdout).toContain('MONGODB_URI');
});

test('an install without the development dependencies does not try to build (prepare)', async () => {
  // `npm ci --omit=dev` runs the project's prepare script, which would fail calling a compiler
  // that is not installed.
  const result = await run('npm', ['run', 'prepare'], { cwd: app, env: imageEnv() });
  expect(result).toMatchObject({ code: 0 });
});

function startService(entry: string, env: Record<string, string>): ChildProcess {
  return killOnExit(
    spawn(process.execPath, [path.join(app, entry)], {
      cwd: app,
      env: imageEnv({ HOST: '127.0.0.1', INTERNAL_TOKEN: 'production-layout-token', ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((r) => child.once('exit', (code) => r(code)));
}

test('both services serve a request with a key made by the CLI', async () => {
  const dataDir = tempDataDir();
  const created = await run(
    'tool-directory',
    ['keys', 'create', '--tier', 'free', '--email', 'dev@example.com', '--name', 'D'],
    { cwd: app, env: imageEnv({ DATA_DIR: dataDir }) },
  );
  const { apiKey } = JSON.parse(created.stdout) as { apiKey: string };
  const [port, catalogPort, metricsPort, catalogMetricsPort] = await Promise.all(
    [0, 1, 2, 3].map(() => freePort()),
  );
  const catalog = startService('dist/services/catalog/src/server.js', {
    CATALOG_PORT: String(catalogPort),
    METRICS_PORT: String(catalogMetricsPort),
  });
  const gateway = startService('dist/services/gateway/src/server.js', {
    PORT: String(port),
    METRICS_PORT: String(metricsPort),
    CATALOG_URL: `http://127.0.0.1:${catalogPort}`,
    DATA_DIR: dataDir,
  });
  try {
    const response = await waitFor(
      async () => {
        const r = await fetch(`http://127.0.0.1:${port}/v1/tools/langchain`, {
          headers: { 'x-api-key': apiKey },
        });
        return r.status === 200 ? r : undefined;
      },
      // Both started together; the gateway asks after its catalog until it answers.
      { what: 'the gateway to answer through the catalog', timeoutMs: SERVICE_START_MS },
    );
    expect(((await response.json()) as { data: { slug: string } }).data.slug).toBe('langchain');
  } finally {
    gateway.kill('SIGTERM');
    catalog.kill('SIGTERM');
    await Promise.all([exitOf(gateway), exitOf(catalog)]);
  }
});

test('LOG_PRETTY without pino-pretty (a development dependency) stops the service with the reason', async () => {
  const gateway = startService('dist/services/gateway/src/server.js', {
    PORT: String(await freePort()),
    METRICS_PORT: String(await freePort()),
    DATA_DIR: tempDataDir(),
    LOG_PRETTY: 'true',
  });
  let output = '';
  gateway.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  gateway.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  const code = await exitOf(gateway);
  expect(code).toBe(1);
  expect(output).toMatch(/LOG_PRETTY.*pino-pretty/s);
});

/** The Dockerfile's instructions, continuation lines joined and comments dropped. */
function instructions(): { stage: string; keyword: string; args: string }[] {
  const text = readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8')
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ');
  let stage = '';
  const result = [];
  for (const line of text.split('\n')) {
    const match = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (!match) continue;
    const [, keyword = '', args = ''] = match;
    if (keyword === 'FROM') stage = /\sAS\s+(\S+)/i.exec(args)?.[1] ?? '';
    result.push({ stage, keyword, args: args.replace(/\s+/g, ' ').trim() });
  }
  return result;
}

describe('the Dockerfile', () => {
  const all = instructions();
  const inStage = (stage: string, keyword: string) =>
    all.filter((i) => i.stage === stage && i.keyword === keyword).map((i) => i.args);
  const runtimeStages = ['runtime', 'catalog', 'gateway'];

  test('builds once, then the two images from one runtime stage', () => {
    expect(all.filter((i) => i.keyword === 'FROM').map((i) => i.args)).toEqual([
      '${NODE_IMAGE} AS build',
      '${NODE_IMAGE} AS runtime',
      'runtime AS catalog',
      'runtime AS gateway',
    ]);
    for (const file of ['gateway/Dockerfile', 'services/catalog/Dockerfile']) {
      expect([file, existsSync(path.join(repoRoot, file))]).toEqual([file, false]);
    }
  });

  test('runs on a Debian slim Node base, the Node release npm scripts and the suite run on', () => {
    const image = all.find((i) => i.keyword === 'ARG' && i.args.startsWith('NODE_IMAGE='))?.args;
    // Node 22 is supported until April 2027 and 24 until April 2028; 20 is past its end of life.
    expect(image).toMatch(/^NODE_IMAGE=node:(22|24)\.\d+\.\d+-(bookworm|trixie)-slim$/);
    // The `node` development dependency: npm scripts, `npm test` among them, run on it.
    expect(image).toBe(`NODE_IMAGE=node:${packageJson.devDependencies.node}-bookworm-slim`);
  });

  test('installs and prunes in the build stage without install scripts, copies the result', () => {
    const build = inStage('build', 'RUN').join('\n');
    expect(build).toContain('npm ci --no-audit --no-fund --ignore-scripts');
    expect(build).toContain('npm prune --omit=dev');
    for (const stage of runtimeStages) {
      expect([stage, inStage(stage, 'RUN').join('\n')]).toEqual([
        stage,
        expect.not.stringMatching(/npm (ci|install)|apt-get|python3|g\+\+/),
      ]);
    }
    expect(inStage('runtime', 'COPY')).toEqual([
      '--from=build /app/node_modules ./node_modules',
      '--from=build /app/dist ./dist',
      'package.json ./',
    ]);
  });

  test("uses the build's CA bundle in the build stage only, and builds without one", () => {
    // An optional file: the glob matches nothing when the context has no build-ca.crt.
    expect(inStage('build', 'COPY')[0]).toBe('package.json package-lock.json build-ca.cr[t] ./');
    expect(inStage('build', 'RUN')[0]).toMatch(
      /^if \[ -f build-ca\.crt \]; then export NODE_EXTRA_CA_CERTS=/,
    );
    const runtime = all.filter((i) => runtimeStages.includes(i.stage));
    expect(runtime.filter((i) => /build-ca|NODE_EXTRA_CA_CERTS|cafile/.test(i.args))).toEqual([]);
    const ignoredByGit = readFileSync(path.join(repoRoot, '.gitignore'), 'utf8').split('\n');
    expect(ignoredByGit).toContain('/build-ca.crt');
  });

  test("runs as the chart's uid with DATA_DIR the one writable path", () => {
    expect(inStage('runtime', 'USER')).toEqual(['1000:1000']);
    expect(inStage('runtime', 'RUN')).toEqual([
      `ln -s /app/${packageJson.bin['tool-directory']} /usr/local/bin/tool-directory && mkdir -p /data && chown 1000:1000 /data`,
    ]);
    expect(inStage('runtime', 'ENV').join(' ')).toContain('DATA_DIR=/data');
  });

  test('carries the OCI labels, its version the package version', () => {
    for (const target of ['catalog', 'gateway']) {
      const labels = [...inStage('runtime', 'LABEL'), ...inStage(target, 'LABEL')].join(' ');
      for (const key of ['title', 'description', 'version', 'revision', 'base.name']) {
        expect([target, labels]).toEqual([
          target,
          expect.stringContaining(`org.opencontainers.image.${key}=`),
        ]);
      }
      expect(labels).toContain(`org.opencontainers.image.title="tool-directory-${target}"`);
    }
    const version = all.find((i) => i.keyword === 'ARG' && i.args.startsWith('VERSION='))?.args;
    expect(version).toBe(`VERSION=${packageJson.version}`);
  });

  test('starts node itself (PID 1), the gateway with its flags as npm start and the harnesses do', () => {
    expect(inStage('gateway', 'CMD').map((c) => JSON.parse(c) as string[])).toEqual([
      ['node', ...GATEWAY_NODE_FLAGS, 'dist/services/gateway/src/server.js'],
    ]);
    expect(inStage('catalog', 'CMD').map((c) => JSON.parse(c) as string[])).toEqual([
      ['node', 'dist/services/catalog/src/server.js'],
    ]);
  });
});

test("the CLI's bin and its npm aliases run the compiled file the images hold", () => {
  const bin = packageJson.bin['tool-directory']!;
  expect(bin).toMatch(/^dist\//);
  expect(statSync(path.join(app, bin)).mode & 0o111).toBe(0o111);
  for (const name of ['keys', 'catalog', 'seed']) {
    expect(packageJson.scripts[name]).toBe(`node ${bin} ${name}`);
  }
  const ignored = readFileSync(path.join(repoRoot, '.dockerignore'), 'utf8').split('\n');
  expect(ignored).not.toContain('build-ca.crt');
});
