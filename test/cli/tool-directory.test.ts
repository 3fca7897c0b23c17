import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { KEY_CHANGE_POLL_MS } from '../../services/gateway/src/keys/follow-key-changes';
import { inProcessGateway } from '../support/gateway';
import type { ToolRecord } from '../../services/catalog/src/schemas/tool';
import { dataset, newTool } from '../support/catalog';
import { freePort } from '../support/ports';
import { RedisCluster } from '../support/redis-cluster';
import { RedisServer } from '../support/redis-server';
import { type CliResult, importFile, runBin, tempDataDir } from '../support/services';
import { run, shellEnv } from '../deploy/commands';

/**
 * `tool-directory`, the operators' CLI, run as a user runs it: the bin file package.json names,
 * started by its shebang (and `npx tool-directory` in the development tree). stdout carries the
 * result alone, as JSON; stderr a JSON line per warning or error; the exit status says how it
 * went: 0 done, 1 failed, 2 usage error (75, storage full: test/integration/storage-full.test.ts).
 */

/** `tool-directory <argv…>` with only PATH and `env` set. */
const cli = (argv: string[], env: Record<string, string> = {}) => runBin(argv, env);

/** The JSON a successful run printed on stdout, after checking it printed nothing else. */
function printed<T>(result: CliResult): T {
  expect(result).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(result.stdout) as T;
}

/** The error a failed run printed: stdout empty, the first line of stderr its JSON. */
function failure(result: CliResult) {
  expect(result.stdout).toBe('');
  const [first = '', ...rest] = result.stderr.split('\n');
  return { code: result.code, error: JSON.parse(first) as Record<string, unknown>, rest };
}

const LEAVES = [
  'keys create',
  'keys list',
  'keys revoke',
  'keys set-tier',
  'catalog import',
  'catalog delete',
  'catalog export',
  'catalog stale',
  'seed',
];
/** The commands that store a change, and so may find the storage full. */
const WRITING = ['keys create', 'keys revoke', 'keys set-tier', 'catalog import', 'catalog delete'];

describe('--help', () => {
  test.each([
    [[], ['keys', 'catalog', 'seed']],
    [['keys'], ['create', 'list', 'revoke', 'set-tier']],
    [['catalog'], ['import', 'delete', 'export', 'stale']],
  ])('tool-directory %j --help lists its commands on stdout, exit 0', async (group, commands) => {
    for (const flag of ['--help', '-h']) {
      const result = await cli([...group, flag]);
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toMatch(
        new RegExp(`^Usage: ${['tool-directory', ...group].join(' ')} <command>\\n`),
      );
      for (const command of commands)
        expect(result.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    }
  });

  test.each(LEAVES)(
    'tool-directory %s --help: the usage, options and exit statuses on stdout, exit 0',
    async (command) => {
      const result = await cli([...command.split(' '), '--help']);
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toMatch(new RegExp(`^Usage: tool-directory ${command}\\b`));
      expect(result.stdout).toMatch(/^ {2}-h, --help +print this help$/m);
      const statuses = result.stdout.split('Exit status:\n')[1]?.match(/^ {2}\d+/gm);
      expect(statuses?.map(Number)).toEqual(WRITING.includes(command) ? [0, 1, 2, 75] : [0, 1, 2]);
    },
  );

  test('a command with --help among other arguments only prints its help, touching no store', async () => {
    const dataDir = tempDataDir();
    const result = await cli(['keys', 'create', '--email', 'x@example.com', '--help'], {
      DATA_DIR: dataDir,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: tool-directory keys create --email <email>/);
    expect(readdirSync(dataDir)).toEqual([]);
  });
});

describe('usage errors: exit 2, the error as JSON then the usage on stderr, nothing on stdout', () => {
  test.each([
    [[], 'Missing command', 'tool-directory <command>'],
    [['bogus'], "Unknown command 'bogus'", 'tool-directory <command>'],
    [['keys'], 'Missing command', 'tool-directory keys <command>'],
    [['keys', 'bogus'], "Unknown command 'bogus'", 'tool-directory keys <command>'],
    [['keys', 'list', '--tier', 'pro'], "Unknown option '--tier'", 'tool-directory keys list'],
    [
      ['keys', 'create', '--email'],
      "Option '--email <value>' argument missing",
      'tool-directory keys create',
    ],
    [['keys', 'revoke'], 'Missing argument <key>', 'tool-directory keys revoke <key>'],
    [['keys', 'revoke', 'a', 'b'], "Unexpected argument 'b'", 'tool-directory keys revoke <key>'],
    [
      ['keys', 'set-tier', 'key_x', 'gold'],
      'Tier must be one of free, pro, enterprise',
      'tool-directory keys set-tier',
    ],
    [
      ['keys', 'create', '--tier', 'gold', '--email', 'a@b.co', '--name', 'A'],
      'Tier must be one of',
      'tool-directory keys create',
    ],
    [['catalog', 'import'], 'Missing argument <file>', 'tool-directory catalog import <file>'],
    [
      ['catalog', 'export', '--format', 'xml'],
      '--format must be one of ndjson, json, csv',
      'tool-directory catalog export',
    ],
    [
      ['catalog', 'stale'],
      '--older-than must be a number of days, e.g. 90d',
      'tool-directory catalog stale --older-than <n>d',
    ],
    [
      ['catalog', 'stale', '--older-than', '30'],
      '--older-than must be a number of days, e.g. 90d',
      'tool-directory catalog stale',
    ],
    [
      ['catalog', 'stale', '--older-than', '0d'],
      '--older-than must be a number of days, e.g. 90d',
      'tool-directory catalog stale',
    ],
    [['seed', '--force'], "Unknown option '--force'", 'tool-directory seed'],
  ])('tool-directory %j', async (argv, message, usage) => {
    const dataDir = tempDataDir();
    const { code, error, rest } = failure(await cli(argv, { DATA_DIR: dataDir }));
    expect(code).toBe(2);
    expect(error).toEqual({ error: expect.stringContaining(message) as unknown });
    expect(rest[0]?.startsWith(`Usage: ${usage}`)).toBe(true);
    expect(rest.join('\n')).toContain('--help` tells more.');
    // Refused before any store was opened.
    expect(readdirSync(dataDir)).toEqual([]);
  });
});

describe('keys', () => {
  const env = {
    DATA_DIR: tempDataDir(),
    QUOTA_FREE: '7',
    QUOTA_PRO: '70',
    QUOTA_ENTERPRISE: '700',
  };
  type Key = { apiKey?: string; keyId: string; tier: string; dailyLimit: number; status: string };

  test("create, set-tier, list and revoke print the key with its tier's dailyLimit; exit 0", async () => {
    const created = printed<Key>(
      await cli(['keys', 'create', '--email', 'limits@example.com', '--name', ' Limits '], env),
    );
    expect(created).toMatchObject({ tier: 'free', dailyLimit: 7, status: 'active' });
    expect(created.apiKey).toMatch(/^tdk_/);

    const byId = printed<Key>(await cli(['keys', 'set-tier', created.keyId, 'pro'], env));
    expect(byId).toMatchObject({ keyId: created.keyId, tier: 'pro', dailyLimit: 70 });
    expect(byId).not.toHaveProperty('apiKey');
    const byKey = printed<Key>(await cli(['keys', 'set-tier', created.apiKey!, 'enterprise'], env));
    expect(byKey).toMatchObject({ keyId: created.keyId, tier: 'enterprise', dailyLimit: 700 });

    const listed = printed<Key[]>(await cli(['keys', 'list'], env));
    expect(listed.find((k) => k.keyId === created.keyId)).toMatchObject({
      tier: 'enterprise',
      dailyLimit: 700,
      name: 'Limits',
    });

    const revoked = printed<Key>(await cli(['keys', 'revoke', created.keyId], env));
    expect(revoked).toMatchObject({ status: 'revoked', tier: 'enterprise', dailyLimit: 700 });
  });

  test('failures exit 1 with the error as one JSON line on stderr and nothing on stdout', async () => {
    const unknown = failure(await cli(['keys', 'revoke', 'key_nope'], env));
    expect(unknown).toEqual({ code: 1, error: { error: "No key matches 'key_nope'" }, rest: [''] });

    const args = ['keys', 'create', '--email', 'twice@example.com', '--name', 'Twice'];
    printed(await cli(args, env));
    expect(failure(await cli(args, env))).toMatchObject({
      code: 1,
      error: { error: 'An active key already exists for twice@example.com' },
    });

    const { keyId } = printed<Key[]>(await cli(['keys', 'list'], env)).find(
      (k) => k.status === 'active',
    )!;
    printed(await cli(['keys', 'revoke', keyId], env));
    expect(failure(await cli(['keys', 'set-tier', keyId, 'pro'], env))).toMatchObject({
      code: 1,
      error: { error: expect.stringContaining('is revoked') as unknown },
    });
  });
});

describe('keys create checks who the key is for as POST /v1/register does, in the same words', () => {
  let gateway: Awaited<ReturnType<typeof inProcessGateway>>;
  beforeAll(async () => {
    gateway = await inProcessGateway({ CATALOG_URL: 'http://127.0.0.1:9' });
  });
  afterAll(() => gateway.close());

  const email = 'same-rule@example.com';
  test.each([
    ['an invalid email', { email: 'not-an-email', name: 'A' }],
    ['an email of 255 characters', { email: `${'a'.repeat(243)}@example.com`, name: 'A' }],
    ['no email', { name: 'A' }],
    ['no name', { email }],
    ['a name of blanks only', { email, name: '   ' }],
    ['a name of 101 characters', { email, name: 'n'.repeat(101) }],
    ['a name with a control character', { email, name: 'Bell\u0007' }],
    ['a use case of 1001 characters', { email, name: 'A', useCase: 'u'.repeat(1001) }],
    ['a use case with an escape character', { email, name: 'A', useCase: 'esc\u001b[2J' }],
    ['a name of a zero-width space only', { email, name: '\u200b' }],
    ['a name with a right-to-left override', { email, name: 'Ad\u202ea' }],
    ['a name with a line separator', { email, name: 'Ada\u2028Admin' }],
    ['a name with a soft hyphen', { email, name: 'Ada\u00adLove' }],
    ['a name with a byte order mark', { email, name: 'Ada\ufeffLove' }],
    ['a use case with a right-to-left override', { email, name: 'A', useCase: 'x\u202etxt' }],
  ])('%s', async (_case, request: Record<string, string>) => {
    const api = await gateway.app.inject({
      method: 'POST',
      url: '/v1/register',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(request),
    });
    expect(api.statusCode).toBe(400);

    const dataDir = tempDataDir();
    const options = Object.entries(request).flatMap(([field, value]) => [
      field === 'useCase' ? '--use-case' : `--${field}`,
      value,
    ]);
    const { code, error } = failure(
      await cli(['keys', 'create', '--tier', 'pro', ...options], { DATA_DIR: dataDir }),
    );
    expect(code).toBe(2);
    expect(error).toEqual({ error: api.json<{ error: string }>().error });
    expect(existsSync(path.join(dataDir, 'keys.db'))).toBe(false);
  });

  test('a name is trimmed by both', async () => {
    const request = { email: 'trimmed@example.com', name: '  Ada  ', useCase: 'two\nlines' };
    const api = await gateway.app.inject({
      method: 'POST',
      url: '/v1/register',
      payload: request,
    });
    expect(api.statusCode).toBe(201);
    const created = printed<{ name: string }>(
      await cli(
        [
          'keys',
          'create',
          '--email',
          request.email,
          '--name',
          request.name,
          '--use-case',
          request.useCase,
        ],
        { DATA_DIR: tempDataDir() },
      ),
    );
    expect(created.name).toBe(api.json<{ name: string }>().name);
    expect(created.name).toBe('Ada');
  });

  test('a name is put in NFC by both: an accent sent apart is composed', async () => {
    const request = { email: 'nfc@example.com', name: 'Rene\u0301e' };
    const api = await gateway.app.inject({
      method: 'POST',
      url: '/v1/register',
      payload: request,
    });
    expect(api.statusCode).toBe(201);
    const created = printed<{ name: string }>(
      await cli(['keys', 'create', '--email', request.email, '--name', request.name], {
        DATA_DIR: tempDataDir(),
      }),
    );
    expect(created.name).toBe(api.json<{ name: string }>().name);
    expect(created.name).toBe('Ren\u00e9e');
  });
});

describe('catalog', () => {
  test('an invalid import exits 1, changes nothing, and gives every problem as JSON on stderr', async () => {
    const env = { DATA_DIR: tempDataDir() };
    const bad = importFile([newTool({ slug: 'fine-tool', name: 'Fine Tool' }), { name: 'Broken' }]);
    const { code, error } = failure(await cli(['catalog', 'import', bad], env));
    expect(code).toBe(1);
    expect(error.error).toMatch(/^Invalid tool records: /);
    expect(error.problems).toEqual(
      expect.arrayContaining([
        { index: 1, slug: null, field: 'slug', message: expect.any(String) },
      ]),
    );
    const exported = await cli(['catalog', 'export', '--format', 'json'], env);
    expect(exported.code).toBe(0);
    const { data } = JSON.parse(exported.stdout) as { data: { slug: string }[] };
    expect(data.some((t) => t.slug === 'fine-tool')).toBe(false);
    // The records on stdout, the summary as a JSON line on stderr.
    expect(JSON.parse(exported.stderr)).toMatchObject({ exported: data.length, format: 'json' });
  });
});

describe('catalog stale', () => {
  interface Stale {
    olderThan: string;
    before: string;
    tools: { slug: string; name: string; source: string; verifiedAt: string }[];
  }
  const DAY_MS = 86_400_000;

  test('lists the tools verified more than n days ago, oldest check first, until checked again', async () => {
    const env = { DATA_DIR: tempDataDir() };
    const compiled = `${dataset.meta.pricingAsOf}T00:00:00.000Z`;
    const recently = new Date(Date.now() - 3_600_000).toISOString();
    const longAgo = new Date(Date.parse(compiled) - 100 * DAY_MS).toISOString();
    const [first, second] = dataset.tools as [ToolRecord, ToolRecord];
    const imported = printed<{ created: string[]; updated: unknown[] }>(
      await cli(
        [
          'catalog',
          'import',
          importFile([
            newTool({ verifiedAt: recently }),
            { ...first, verifiedAt: longAgo, source: 'https://example.com/pricing' },
          ]),
        ],
        env,
      ),
    );
    expect(imported.created).toEqual(['zephyr-notes']);

    const startedAt = Date.now();
    const stale = printed<Stale>(await cli(['catalog', 'stale', '--older-than', '1d'], env));
    expect(stale.olderThan).toBe('1d');
    expect(Date.parse(stale.before)).toBeGreaterThanOrEqual(startedAt - DAY_MS - 1_000);
    expect(Date.parse(stale.before)).toBeLessThanOrEqual(Date.now() - DAY_MS);
    // Every tool but the one checked two days ago: the bundled ones at the dataset's date.
    expect(stale.tools).toHaveLength(dataset.tools.length);
    expect(stale.tools[0]).toEqual({
      slug: first.slug,
      name: first.name,
      source: 'https://example.com/pricing',
      verifiedAt: longAgo,
    });
    expect(stale.tools[1]).toEqual({
      slug: expect.any(String) as unknown,
      name: expect.any(String) as unknown,
      source: expect.stringMatching(/^https?:\/\//) as unknown,
      verifiedAt: compiled,
    });
    const rest = stale.tools.slice(1).map((tool) => tool.slug);
    expect(rest).toEqual([...rest].sort());
    expect(rest).not.toContain('zephyr-notes');

    // Older than the bundled dataset: only the tool checked before it.
    const days = Math.floor((Date.now() - Date.parse(compiled)) / DAY_MS) + 1;
    const older = printed<Stale>(await cli(['catalog', 'stale', '--older-than', `${days}d`], env));
    expect(older.tools.map((tool) => tool.slug)).toEqual([first.slug]);

    // Checked again today: off the list.
    const now = new Date().toISOString();
    await cli(['catalog', 'import', importFile([{ ...second, verifiedAt: now }])], env);
    const after = printed<Stale>(await cli(['catalog', 'stale', '--older-than', '1d'], env));
    expect(after.tools.map((tool) => tool.slug)).not.toContain(second.slug);
    expect(after.tools).toHaveLength(dataset.tools.length - 1);
  });
});

describe('catalog import checks text as the admin endpoints do', () => {
  test('a file that is not UTF-8 exits 1 saying so, and changes nothing', async () => {
    const env = { DATA_DIR: tempDataDir() };
    const file = importFile([newTool({ slug: 'latin-tool', name: 'Caf\u00e9 Tool' })]);
    writeFileSync(file, readFileSync(file, 'utf8'), 'latin1');
    const { code, error } = failure(await cli(['catalog', 'import', file], env));
    expect(code).toBe(1);
    expect(error).toEqual({ error: `${file} is not valid UTF-8` });
    const exported = await cli(['catalog', 'export', '--format', 'json'], env);
    const { data } = JSON.parse(exported.stdout) as { data: { slug: string }[] };
    expect(data.some((t) => t.slug === 'latin-tool')).toBe(false);
  });

  test('text is put in NFC; invisible and bidi characters are refused, naming the field', async () => {
    const env = { DATA_DIR: tempDataDir() };
    const composed = printed<{ created: string[] }>(
      await cli(
        ['catalog', 'import', importFile([newTool({ slug: 'nfc-tool', name: 'Cafe\u0301 Tool' })])],
        env,
      ),
    );
    expect(composed.created).toEqual(['nfc-tool']);
    const exported = await cli(['catalog', 'export', '--format', 'json'], env);
    const { data } = JSON.parse(exported.stdout) as { data: { slug: string; name: string }[] };
    expect(data.find((t) => t.slug === 'nfc-tool')?.name).toBe('Caf\u00e9 Tool');

    const bidi = importFile([newTool({ slug: 'bidi-tool', name: 'Bidi\u202e Tool' })]);
    const { code, error } = failure(await cli(['catalog', 'import', bidi], env));
    expect(code).toBe(1);
    expect(error.problems).toEqual([
      {
        index: 0,
        slug: 'bidi-tool',
        field: 'name',
        message: expect.stringMatching(/^must be text without control characters/) as unknown,
      },
    ]);
  });
});

/**
 * A CLI exits within 0.5 s of printing its result: nothing it opened (a Redis connection that
 * failed) holds the process. A busy machine may take longer to end it and to tell this test: a
 * second more.
 */
const EXIT_AFTER_RESULT_MS = 500 + 1_000;
/**
 * The announcement of a change is given up after the interval at which every gateway reads the
 * key store's change log (by then it hastens nothing), and reported; a second more on a busy
 * machine.
 */
const RESULT_AFTER_COMMIT_MS = KEY_CHANGE_POLL_MS + 1_000;

/**
 * With Redis down (killed: connections refused) or stalled (SIGSTOP: connections accepted by the
 * kernel, nothing answered), a change is stored, printed with its warning and exit 0, as
 * docs/operations.md says; stderr holds only the documented JSON lines, and the process leaves
 * as soon as it has printed.
 */
describe.each(['killed', 'stopped'] as const)('with Redis %s', (state) => {
  let redis: RedisServer;
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };

  beforeAll(async () => {
    redis = await RedisServer.start();
    env.REDIS_URL = redis.url;
    if (state === 'killed') await redis.stop();
    else redis.signal('SIGSTOP');
  });
  afterAll(() => redis.stop());

  /** The result of a run that stored its change but could not announce it. */
  function storedWithWarning(result: CliResult) {
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as { warnings?: string[] };
    expect(report.warnings).toEqual([expect.stringContaining('The change is stored')]);
    // Nothing but the documented lines on stderr: the warning, once.
    const lines = result.stderr.split('\n').filter(Boolean);
    expect(lines.map((line) => JSON.parse(line) as unknown)).toEqual([
      { warning: report.warnings![0] },
    ]);
    expect(result.exitedAt - result.printedAt!).toBeLessThan(EXIT_AFTER_RESULT_MS);
    return report;
  }

  test('keys create prints the stored key with a warning, within the announcement deadline, then exits', async () => {
    const result = await cli(
      ['keys', 'create', '--email', `away-${state}@example.com`, '--name', 'Away'],
      env,
    );
    const key = storedWithWarning(result) as { apiKey: string; createdAt: string };
    expect(key.apiKey).toMatch(/^tdk_/);
    expect(result.printedAt! - Date.parse(key.createdAt)).toBeLessThan(RESULT_AFTER_COMMIT_MS);
    // Stored: the same email again is refused for that reason.
    const again = failure(
      await cli(['keys', 'create', '--email', `away-${state}@example.com`, '--name', 'A'], env),
    );
    expect(again.error).toEqual({
      error: `An active key already exists for away-${state}@example.com`,
    });
  });

  test('catalog import and catalog delete print their summary with a warning, then exit', async () => {
    const slug = `away-${state}-tool`;
    const imported = storedWithWarning(
      await cli(['catalog', 'import', importFile([newTool({ slug, name: `Away ${state}` })])], env),
    );
    expect(imported).toMatchObject({ created: [slug] });
    const deleted = storedWithWarning(await cli(['catalog', 'delete', slug], env));
    expect(deleted).toMatchObject({ deleted: [slug] });
  });
});

/**
 * Redis behind Sentinel with no sentinel answering: ioredis's connection to each sentinel, which
 * no option of ours reaches, would hold the process 2 s after the result.
 */
describe('with every sentinel down', () => {
  test('keys create prints the stored key with a warning, then exits', async () => {
    const env = { DATA_DIR: tempDataDir(), REDIS_SENTINELS: `127.0.0.1:${await freePort()}` };
    const result = await cli(
      ['keys', 'create', '--email', 'no-sentinel@example.com', '--name', 'Away'],
      env,
    );
    expect(result.code).toBe(0);
    const key = JSON.parse(result.stdout) as { warnings?: string[] };
    expect(result.stderr).toBe(`${JSON.stringify({ warning: key.warnings?.[0] })}\n`);
    expect(result.exitedAt - result.printedAt!).toBeLessThan(EXIT_AFTER_RESULT_MS);
  });
});

/**
 * A Redis Cluster whose every node is stalled: ioredis keeps a command queued while it tries to
 * read the cluster's map again and again, which the announcement's deadline cuts short.
 */
describe('with a Redis Cluster stopped', () => {
  let cluster: RedisCluster;
  let env: Record<string, string>;

  beforeAll(async () => {
    cluster = await RedisCluster.start({ masters: 3 });
    env = { DATA_DIR: tempDataDir(), ...cluster.env };
    for (const node of cluster.nodes) node.signal('SIGSTOP');
  }, 60_000);
  afterAll(() => cluster.stop());

  test('keys create prints the stored key with a warning, within the announcement deadline, then exits', async () => {
    const result = await cli(
      ['keys', 'create', '--email', 'away-cluster@example.com', '--name', 'Away'],
      env,
    );
    expect(result.code).toBe(0);
    const key = JSON.parse(result.stdout) as { createdAt: string; warnings?: string[] };
    expect(
      result.stderr
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as unknown),
    ).toEqual([{ warning: expect.stringContaining('The change is stored') as unknown }]);
    expect(result.printedAt! - Date.parse(key.createdAt)).toBeLessThan(RESULT_AFTER_COMMIT_MS);
    expect(result.exitedAt - result.printedAt!).toBeLessThan(EXIT_AFTER_RESULT_MS);
  });
});

describe('npx tool-directory in the development tree', () => {
  test('stdout holds only the JSON, on success and on failure; the error is JSON on stderr', async () => {
    const env = shellEnv({ DATA_DIR: tempDataDir() });
    const created = await run(
      'npx',
      [
        'tool-directory',
        'keys',
        'create',
        '--tier',
        'pro',
        '--email',
        'npx@example.com',
        '--name',
        'Npx',
      ],
      { env },
    );
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ tier: 'pro', email: 'npx@example.com' });

    const bad = importFile([{ name: 'Broken' }]);
    const failed = await run('npx', ['tool-directory', 'catalog', 'import', bad], { env });
    expect(failed.code).toBe(1);
    expect(failed.stdout).toBe('');
    expect(JSON.parse(failed.stderr)).toMatchObject({
      error: expect.stringMatching(/^Invalid tool records/) as unknown,
      problems: expect.any(Array) as unknown,
    });
    // npm itself starts each time (a few seconds apiece on a loaded machine).
  }, 120_000);
});
