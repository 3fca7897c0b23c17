import { CatalogChanges } from '../../services/catalog/src/changes/catalog-changes';
import { followCatalogChanges } from '../../services/catalog/src/changes/catalog-follower';
import type { Tool, ToolRecord } from '../../services/catalog/src/schemas/tool';
import { LocalChangeFeed } from '../../services/shared/change-feed/local-change-feed';
import {
  FREE_FIELDS,
  asTier,
  buildTestCatalog,
  dataset,
  embeddedStore,
  newTool,
} from '../support/catalog';
import { withinOneSecond } from '../support/ports';
import { RedisServer } from '../support/redis-server';
import {
  CATALOG_CLI,
  ServiceProcess,
  importFile,
  keyedGet,
  keysCli,
  runCli,
  tempDataDir,
} from '../support/services';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A small deterministic generator (mulberry32): a failing run can be replayed by its seed. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return {
    below: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!,
    chance: (p: number) => next() < p,
  };
}

/**
 * The client of docs/api.md, "Syncing the catalog": asks for the changes after the newest
 * `updatedAt` it has seen, oldest first, a page at a time; each answer moves its cursor to the
 * last record's `updatedAt`. It checks, as it goes, that no record is older than its cursor and
 * that it never gets the same version of a tool twice.
 */
class SyncingClient {
  readonly copy = new Map<string, Json>();
  readonly received = new Set<string>();
  readonly problems: string[] = [];
  cursor: string | undefined;

  constructor(private readonly fetchPage: (url: string) => Promise<Json>) {}

  /** One poll; true when the page was full (more may be waiting). */
  async poll(limit: number): Promise<boolean> {
    const since = this.cursor === undefined ? '' : `&updatedSince=${this.cursor}`;
    const body = await this.fetchPage(`/v1/tools?sort=updatedAt&limit=${limit}${since}`);
    for (const tool of body.data as Json[]) {
      const version = `${tool.slug} ${tool.updatedAt}`;
      if (this.cursor !== undefined && !(tool.updatedAt > this.cursor)) {
        this.problems.push(`${version} is not after the cursor ${this.cursor}`);
      }
      if (this.received.has(version)) this.problems.push(`${version} came twice`);
      this.received.add(version);
      this.copy.set(tool.slug, tool);
      this.cursor = tool.updatedAt;
    }
    return body.data.length === limit;
  }

  /** Polls until a page is not full: the copy then holds every change served so far. */
  async catchUp(limit: number): Promise<void> {
    while (await this.poll(limit));
  }
}

describe('a client syncing by updatedSince misses no change and gets none twice', () => {
  test.each([1, 2, 3, 4])(
    'run %i: another process writes while the client polls, the catalog following its changes',
    async (seed) => {
      const rng = random(seed);
      const dataDir = tempDataDir();
      // The catalog process serves one store; the catalog CLI writes through another.
      const served = embeddedStore(dataDir);
      const writer = embeddedStore(dataDir);
      const feed = new LocalChangeFeed(dataDir);
      const changes = new CatalogChanges(writer, feed);
      const unfollow = await followCatalogChanges(served, feed, {
        pollMs: 5_000,
        logger: { warn: () => undefined },
      });
      const app = await buildTestCatalog(served);
      const client = new SyncingClient(
        async (url) => (await app.inject({ url, headers: asTier('free') })).json() as Json,
      );

      const live = new Map<string, ToolRecord>(dataset.tools.map((tool) => [tool.slug, tool]));
      const deleted = new Map<string, ToolRecord>();
      let made = 0;
      const edit = (tool: ToolRecord): ToolRecord => ({
        ...tool,
        pricing: `Edition ${rng.below(1_000_000)}`,
      });
      /** One operator change: an import (new, edited and unchanged tools), or a delete. */
      async function write(): Promise<void> {
        const kind = rng.below(10);
        if (kind < 2 && live.size > 0) {
          const slug = rng.pick([...live.keys()]);
          await changes.delete(slug);
          deleted.set(slug, live.get(slug)!);
          live.delete(slug);
          return;
        }
        const batch = new Map<string, ToolRecord>();
        for (let i = rng.below(6); i >= 0; i--) {
          const choice = rng.below(10);
          if (choice < 2) {
            made += 1;
            const tool = newTool({ slug: `made-${seed}-${made}`, name: `Made ${seed} ${made}` });
            batch.set(tool.slug, tool);
          } else if (choice < 3 && deleted.size > 0) {
            const slug = rng.pick([...deleted.keys()]);
            batch.set(slug, deleted.get(slug)!);
          } else {
            const tool = live.get(rng.pick([...live.keys()]))!;
            // Some are sent unchanged: they must not come to the client again.
            batch.set(tool.slug, rng.chance(0.7) ? edit(tool) : tool);
          }
        }
        await changes.upsert([...batch.values()]);
        for (const [slug, tool] of batch) {
          live.set(slug, tool);
          deleted.delete(slug);
        }
      }

      const writing = (async () => {
        for (let i = 0; i < 60; i++) {
          await write();
          await new Promise((r) => setTimeout(r, rng.below(15)));
        }
      })();
      const polling = (async () => {
        let done = false;
        void writing.then(() => (done = true));
        while (!done) {
          await client.poll(1 + rng.below(30));
          await new Promise((r) => setTimeout(r, rng.below(10)));
        }
      })();
      await Promise.all([writing, polling]);
      // Every change served, then one last catch-up.
      await served.refresh();
      await client.catchUp(25);

      expect(client.problems).toEqual([]);
      const current = new Map<string, Tool>();
      for await (const tool of writer.exportTools()) current.set(tool.slug, tool);
      expect(current.size).toBe(live.size);
      // Every live tool, at its latest version; a tool the copy still has beyond them was deleted
      // (deletions come by webhook or export, not by updatedSince).
      for (const [slug, tool] of current) {
        expect(client.copy.get(slug)).toMatchObject({
          slug,
          pricing: tool.pricing,
          updatedAt: tool.updatedAt,
        });
      }
      for (const slug of client.copy.keys()) {
        if (!current.has(slug)) expect(deleted.has(slug)).toBe(true);
      }

      unfollow();
      await app.close();
      await feed.close();
      await Promise.all([served.close(), writer.close()]);
    },
    60_000,
  );
});

describe.each([
  ['the embedded stack', false],
  ['the stack with Redis', true],
])('updatedSince through the gateway, on %s', (_name, withRedis) => {
  let redis: RedisServer | undefined;
  let catalog: ServiceProcess;
  let gateway: ServiceProcess;
  const env: Record<string, string> = { DATA_DIR: tempDataDir() };
  const keys: Record<'free' | 'pro' | 'enterprise', string> = { free: '', pro: '', enterprise: '' };

  beforeAll(async () => {
    if (withRedis) {
      redis = await RedisServer.start();
      env.REDIS_URL = redis.url;
    }
    catalog = await ServiceProcess.start('catalog', env);
    gateway = await ServiceProcess.start('gateway', {
      ...env,
      CATALOG_URL: catalog.url,
      QUOTA_FREE: '100000',
    });
    for (const tier of ['free', 'pro', 'enterprise'] as const) {
      const created = (await keysCli(
        ['create', '--tier', tier, '--email', `${tier}@sync.example`, '--name', tier],
        env,
      )) as { apiKey: string };
      keys[tier] = created.apiKey;
    }
  });
  afterAll(async () => {
    await Promise.all([gateway.stop(), catalog.stop()]);
    await redis?.stop();
  });

  const get = (url: string, tier: keyof typeof keys = 'free') =>
    keyedGet(gateway.url, keys[tier], url);
  const since = (instant: string, extra = '') =>
    `/v1/tools?updatedSince=${encodeURIComponent(instant)}&sort=updatedAt&limit=100${extra}`;
  const slugsOf = (body: Json) => (body.data as Json[]).map((tool) => tool.slug as string);

  test('after a CLI import, exactly the changed tools, oldest change first, on every tier', async () => {
    const newest = (await get('/v1/tools?sort=-updatedAt&limit=1')).body.data[0].updatedAt;
    const [edited, unchanged, alsoEdited] = [
      dataset.tools[3]!,
      dataset.tools[4]!,
      dataset.tools[5]!,
    ];
    const file = importFile([
      newTool(),
      { ...edited, pricing: 'Synced pricing' },
      unchanged,
      newTool({ slug: 'second-new', name: 'Second New' }),
      { ...alsoEdited, tags: alsoEdited.tags.slice(1) },
    ]);
    const result = await runCli(CATALOG_CLI, ['import', file], env);
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout) as Json;
    expect(summary.unchanged).toEqual([unchanged.slug]);

    const changed = ['zephyr-notes', edited.slug, 'second-new', alsoEdited.slug];
    await withinOneSecond('the import through the gateway', async () => {
      const { body } = await get(since(newest));
      return slugsOf(body).length === changed.length;
    });
    for (const tier of ['free', 'pro', 'enterprise'] as const) {
      const { status, body } = await get(since(newest), tier);
      expect(status).toBe(200);
      expect(slugsOf(body)).toEqual(changed);
      expect(body.meta).toMatchObject({ total: changed.length, page: 1, totalPages: 1 });
      const instants = (body.data as Json[]).map((tool) => tool.updatedAt as string);
      expect(instants.every((instant) => instant > newest)).toBe(true);
      expect(instants).toEqual([...new Set(instants)].sort());
      for (const tool of body.data as Json[]) {
        if (tier === 'free') expect(Object.keys(tool).sort()).toEqual(FREE_FIELDS);
        else expect(tool).toHaveProperty('longDescription');
      }
      expect((body.data as Json[])[1]!.pricing).toBe('Synced pricing');
      const reversed = await get(since(newest).replace('sort=updatedAt', 'sort=-updatedAt'), tier);
      expect(slugsOf(reversed.body)).toEqual([...changed].reverse());
    }
    // The last one seen is the cursor: nothing after it yet.
    const last = (await get(since(newest))).body.data.at(-1).updatedAt as string;
    expect((await get(since(last))).body).toMatchObject({ data: [], meta: { total: 0 } });
    // A detail answer and the export carry the same instants.
    const detail = await get(`/v1/tools/${edited.slug}`, 'enterprise');
    expect(detail.body.data.updatedAt).toBe(
      (await get(since(newest))).body.data.find((t: Json) => t.slug === edited.slug).updatedAt,
    );
  });

  test('the gateway cache keeps each updatedSince answer apart, and a change reaches them within a second', async () => {
    const all = (await get('/v1/tools?sort=-updatedAt&limit=3')).body.data as Json[];
    const [newest, second, third] = all.map((tool) => tool.updatedAt as string) as [
      string,
      string,
      string,
    ];
    const urls = { atNewest: since(newest), atSecond: since(second), atThird: since(third) };
    const answers = async () => ({
      atNewest: slugsOf((await get(urls.atNewest)).body),
      atSecond: slugsOf((await get(urls.atSecond)).body),
      atThird: slugsOf((await get(urls.atThird)).body),
    });
    const expected = {
      atNewest: [],
      atSecond: [all[0]!.slug],
      atThird: [all[1]!.slug, all[0]!.slug],
    };
    // Three rounds: relayed, kept, then served from the cache, never one for another.
    for (let i = 0; i < 3; i++) expect(await answers()).toEqual(expected);
    expect((await get(urls.atSecond)).headers.get('x-cache')).toBe('HIT');

    const result = await runCli(
      CATALOG_CLI,
      ['import', importFile([{ ...dataset.tools[9]!, pricing: 'Changed behind the cache' }])],
      env,
    );
    expect(result.code).toBe(0);
    await withinOneSecond('the change in every updatedSince answer', async () => {
      const now = await answers();
      return now.atNewest.length === 1;
    });
    expect(await answers()).toEqual({
      atNewest: [dataset.tools[9]!.slug],
      atSecond: [all[0]!.slug, dataset.tools[9]!.slug],
      atThird: [all[1]!.slug, all[0]!.slug, dataset.tools[9]!.slug],
    });
  });

  test('an invalid updatedSince is a 400 naming it, through the gateway', async () => {
    const { status, body } = await get('/v1/tools?updatedSince=last-week');
    expect(status).toBe(400);
    expect(body.error).toBe(
      "Invalid query parameter 'updatedSince': must be an ISO 8601 date-time with a time zone (RFC 3339), e.g. 2025-06-30T12:00:00Z",
    );
  });
});
