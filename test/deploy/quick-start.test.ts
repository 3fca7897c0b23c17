import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadGatewayConfig } from '../../services/gateway/src/config';
import { killOnExit } from '../support/child-processes';
import { freePort, waitFor } from '../support/ports';
import { tempDataDir } from '../support/services';
import { SERVICE_START_MS, SHUTDOWN_GRACE_MS, within } from '../support/waits';
import { listening, repoRoot, run, shellEnv } from './commands';

/**
 * README's quick start and commands as a person types them: `npx tool-directory …` prints bare
 * JSON, npm's own output stays npm's (text, saying why an install failed), and `npm start` must
 * stop everything it started when it is told to (SIGTERM from a process manager, a container
 * runtime or `kill`), not only on Ctrl-C.
 */

/** The Node the project pins (the `node` package), which npm scripts run on and the images ship. */
const pinnedNode = (
  JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  }
).devDependencies.node;

test('the suite runs on the pinned Node, whatever the system Node is', () => {
  expect(process.version).toBe(`v${pinnedNode}`);
});

describe('the CLI in the development tree', () => {
  test("npx tool-directory prints bare JSON on stdout; npm run keys, its alias, prints it after npm's banner", async () => {
    const env = shellEnv({ DATA_DIR: tempDataDir() });
    const email = `quick-start-${process.pid}@example.com`;
    const created = await run(
      'npx',
      ['tool-directory', 'keys', 'create', '--tier', 'pro', '--email', email, '--name', 'Quick'],
      { env },
    );
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(created.stdout)).toMatchObject({ email, tier: 'pro' });

    const listed = await run('npx', ['tool-directory', 'keys', 'list'], { env });
    expect(listed).toMatchObject({ code: 0 });
    const keys = JSON.parse(listed.stdout) as unknown;
    expect(JSON.stringify(keys)).toContain(email);

    const alias = await run('npm', ['run', 'keys', '--', 'list'], { env });
    expect(alias).toMatchObject({ code: 0 });
    expect(alias.stdout).toMatch(/^\n> tool-directory@\d+\.\d+\.\d+ keys\n/);
    expect(JSON.parse(alias.stdout.slice(alias.stdout.indexOf('\n[')))).toEqual(keys);
    const silent = await run('npm', ['run', '--silent', 'keys', '--', 'list'], { env });
    expect(JSON.parse(silent.stdout)).toEqual(keys);
  });
});

describe("npm's own output", () => {
  test('is not turned into JSON by the project', async () => {
    const json = await run('npm', ['config', 'get', 'json', '--location=project']);
    expect(json).toMatchObject({ code: 0, stdout: 'false\n' });
  });

  test('says why an install failed', async () => {
    // A lockfile naming a package npm cannot have: --offline makes it fail at once, without the
    // network, the way a broken registry or a typo would fail a real `npm ci`.
    const dir = mkdtempSync(path.join(tmpdir(), 'td-install-'));
    const dependency = '@tool-directory-test/no-such-package';
    writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'x', version: '1.0.0', dependencies: { [dependency]: '1.0.0' } }),
    );
    writeFileSync(
      path.join(dir, 'package-lock.json'),
      JSON.stringify({
        name: 'x',
        version: '1.0.0',
        lockfileVersion: 3,
        requires: true,
        packages: {
          '': { name: 'x', version: '1.0.0', dependencies: { [dependency]: '1.0.0' } },
          [`node_modules/${dependency}`]: {
            version: '1.0.0',
            resolved: `https://registry.npmjs.org/${dependency}/-/no-such-package-1.0.0.tgz`,
            integrity: 'sha512-AAAA',
          },
        },
      }),
    );
    const result = await run('npm', ['ci', '--offline'], { cwd: dir });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/npm error code E[A-Z]+/);
    expect(result.stderr).toContain(dependency);
    expect(result.stdout).not.toMatch(/^\s*\{/);
  });
});

/** npm start's three processes started one after the other: npm, the catalog, the gateway. */
const NPM_START_MS = 3 * SERVICE_START_MS;
// The start, the checks, then the shutdown.
jest.setTimeout(NPM_START_MS + within(0) + within(SHUTDOWN_GRACE_MS) + within(0));

describe('npm start', () => {
  test('runs the catalog, then the gateway once the catalog is ready, on the pinned Node, with room to try registration; SIGTERM stops both and frees all four ports', async () => {
    const [port, catalogPort, metricsPort, catalogMetricsPort] = await Promise.all(
      [0, 1, 2, 3].map(() => freePort()),
    );
    const ports = [port!, catalogPort!, metricsPort!, catalogMetricsPort!];
    // --ignore-scripts skips only the prestart build: `npm test` has built dist/ already.
    const npm = spawn('npm', ['start', '--ignore-scripts'], {
      cwd: repoRoot,
      env: shellEnv({
        HOST: '127.0.0.1',
        PORT: String(port),
        CATALOG_PORT: String(catalogPort),
        METRICS_PORT: String(metricsPort),
        CATALOG_METRICS_PORT: String(catalogMetricsPort),
        DATA_DIR: tempDataDir(),
      }),
      // Its own process group, so that whatever outlives the test can be found and killed.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    killOnExit(npm);
    const output: string[] = [];
    npm.stdout.on('data', (c: Buffer) => output.push(c.toString()));
    npm.stderr.on('data', (c: Buffer) => output.push(c.toString()));
    const exited = new Promise<number | null>((r) => npm.once('exit', (code) => r(code)));
    const died = exited.then((code) => {
      throw new Error(`npm start exited with ${code}:\n${output.join('')}`);
    });
    died.catch(() => undefined);
    try {
      // The gateway listens only once its catalog is ready: its first request can succeed.
      await Promise.race([
        died,
        // npm, then the catalog, then the gateway.
        waitFor(async () => ((await listening(port!)) ? true : undefined), {
          what: 'the gateway listening',
          timeoutMs: NPM_START_MS,
          intervalMs: 10,
        }),
      ]);
      expect((await fetch(`http://127.0.0.1:${catalogPort}/readyz`)).status).toBe(200);
      await Promise.race([
        died,
        waitFor(
          async () => {
            if (!(await Promise.all(ports.map(listening))).every(Boolean)) return undefined;
            return (await fetch(`http://127.0.0.1:${port}/readyz`)).ok ? true : undefined;
          },
          { what: 'both services listening on the four ports', timeoutMs: within(0) },
        ),
      ]);

      // A developer trying registration's validation gets past the deployed hourly limit.
      expect(output.join('')).toMatch(
        /^npm start: REGISTRATIONS_PER_HOUR=1000 for local development/m,
      );
      const deployedLimit = loadGatewayConfig({
        INTERNAL_TOKEN: 'x'.repeat(16),
      }).REGISTRATIONS_PER_HOUR;
      expect(deployedLimit).toBe(10);
      for (let n = 0; n <= deployedLimit; n++) {
        const registered = await fetch(`http://127.0.0.1:${port}/v1/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: `local-${n}@example.com`, name: 'Local' }),
        });
        expect(registered.status).toBe(201);
      }
      for (const metrics of [metricsPort, catalogMetricsPort]) {
        const text = await (await fetch(`http://127.0.0.1:${metrics}/metrics`)).text();
        expect(text).toContain(`nodejs_version_info{version="v${pinnedNode}"`);
      }

      npm.kill('SIGTERM');
      await waitFor(
        async () => ((await Promise.all(ports.map(listening))).some(Boolean) ? undefined : true),
        { what: 'all four ports to be free', timeoutMs: within(SHUTDOWN_GRACE_MS) },
      );
      await exited;
    } finally {
      try {
        process.kill(-npm.pid!, 'SIGKILL');
      } catch {
        // The group is gone already: nothing was left behind.
      }
    }
  });
});
