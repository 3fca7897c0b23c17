import { isUtf8 } from 'node:buffer';
import { createWriteStream, readFileSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { Type } from '@sinclair/typebox';
import { CatalogChanges } from '../../services/catalog/src/changes/catalog-changes';
import { VERSION_POLL_MS } from '../../services/catalog/src/changes/open-catalog-changes';
import { parseImport } from '../../services/catalog/src/changes/import-file';
import { CatalogConfigSchema } from '../../services/catalog/src/config';
import { loadDatasetMeta } from '../../services/catalog/src/records/dataset';
import { formatInstant } from '../../services/catalog/src/records/date-time';
import {
  EXPORT_FORMATS,
  type ExportFormat,
  encodeExport,
} from '../../services/catalog/src/export/export-formats';
import { InvalidToolsError } from '../../services/catalog/src/records/tool-validator';
import { createStore } from '../../services/catalog/src/store/create-store';
import type { CatalogStore } from '../../services/catalog/src/store/catalog-store';
import type { Tool } from '../../services/catalog/src/schemas/tool';
import { commandLineChangeFeed } from '../../services/shared/change-feed/create-change-feed';
import { loadConfig } from '../../services/shared/config';
import { redisProblems } from '../../services/shared/redis-config';
import { type Command, CommandFailed, STORE_SETTINGS, UsageError } from './command-line';
import { SEARCH_ANALYTICS_RETENTION_DAYS } from '../../services/gateway/src/analytics/search-analytics-store';
import { openKeyStore } from '../../services/gateway/src/dependencies';

const CatalogCliConfigSchema = Type.Pick(CatalogConfigSchema, STORE_SETTINGS);

const STORE = `Works against the running system's store (MONGODB_URI, else DATA_DIR); every running
catalog serves a change within a second (through Redis when there is Redis). Run it with the
catalog's environment.`;

const SUMMARY = `Prints the change summary as JSON: created, updated (each slug with its changedFields),
unchanged, deleted, and the catalog version after the change; and warnings when the change
could not be announced (it is stored all the same).`;

/** The store and the operator change service on it, for one command's run. */
async function withCatalog<T>(
  work: (store: CatalogStore, service: CatalogChanges) => Promise<T>,
): Promise<T> {
  const config = loadConfig(CatalogCliConfigSchema, process.env, redisProblems);
  const store = await createStore(config);
  // Every catalog reads the store's version as often: an announcement that has not gone out by
  // then is given up, and reported once, in the summary.
  const feed = commandLineChangeFeed(config, 'catalog-cli', VERSION_POLL_MS);
  try {
    return await work(store, new CatalogChanges(store, feed));
  } finally {
    await feed.close();
    await store.close();
  }
}

const importCommand: Command = {
  name: 'import',
  summary: 'create or update tools by slug from a file',
  synopsis: '<file>',
  description: `Creates or replaces whole tools, by slug, from a file: a JSON array of tool records, the
JSON export ({"data": [...]}), or NDJSON (one record a line); /dev/stdin reads a pipe. Every
record is checked first: one invalid record changes nothing, and the error on stderr lists
every problem ({"error": …, "problems": [{index, slug, field, message}, …]}).

${SUMMARY}

${STORE}`,
  arguments: ['file'],
  failures:
    'an invalid record (nothing changes), a file that cannot be read, is not UTF-8 or is not JSON, the store cannot be reached',
  writes: true,
  run: ({ args: [file = ''] }) =>
    withCatalog(async (_store, service) => {
      try {
        // As an API body: bytes that are not UTF-8 are refused, never read as U+FFFD.
        const bytes = readFileSync(file);
        if (!isUtf8(bytes)) throw new Error(`${file} is not valid UTF-8`);
        return await service.upsert(parseImport(bytes.toString('utf8')));
      } catch (err) {
        if (err instanceof InvalidToolsError) {
          throw new CommandFailed(err.message, { problems: err.problems });
        }
        throw err;
      }
    }),
};

const deleteCommand: Command = {
  name: 'delete',
  summary: 'delete one tool (a tombstone keeps seeds from restoring it)',
  synopsis: '<slug>',
  description: `Deletes one tool: within a second it is a 404 and gone from lists, search and exports. The
store keeps a tombstone, so no seed or upgrade brings it back; importing it again does.

${SUMMARY}

${STORE}`,
  arguments: ['slug'],
  failures: 'no live tool has the slug, the store cannot be reached',
  writes: true,
  run: ({ args: [slug = ''] }) =>
    withCatalog(async (_store, service) => {
      const summary = await service.delete(slug);
      if (!summary) throw new Error(`Tool '${slug}' not found`);
      return summary;
    }),
};

const exportCommand: Command = {
  name: 'export',
  summary: 'every tool with all its data, to stdout or a file',
  synopsis: '[--format <format>] [--out <file>]',
  description: `Writes every live tool with all its data, ordered by name, in the formats of GET /v1/export:
ndjson, json (the {data, meta} envelope, which imports as it is) or csv. The records go to
stdout unless --out names a file; the summary goes to stderr as one JSON line:
{"exported", "format", "version", "out"}.

${STORE}`,
  options: {
    format: {
      value: `<${EXPORT_FORMATS.join('|')}>`,
      description: 'the format',
      default: 'ndjson',
    },
    out: { value: '<file>', description: 'write the records to this file instead of stdout' },
  },
  failures: 'the store cannot be reached, the file cannot be written',
  run: async ({ values: { format = '', out } }) => {
    if (!EXPORT_FORMATS.includes(format as ExportFormat)) {
      throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(', ')}`);
    }
    return withCatalog(async (store) => {
      let total = 0;
      async function* counted() {
        for await (const tool of store.exportTools()) {
          total += 1;
          yield tool;
        }
      }
      const { body } = encodeExport(
        format as ExportFormat,
        counted(),
        loadDatasetMeta().attribution,
      );
      await pipeline(body, out ? createWriteStream(out) : process.stdout, {
        end: out !== undefined,
      });
      // The records went to stdout (or the file): the summary goes to stderr.
      process.stderr.write(
        `${JSON.stringify({ exported: total, format, version: store.version, out: out ?? 'stdout' })}\n`,
      );
      return undefined;
    });
  },
};

const DAY_MS = 86_400_000;

/** `--older-than <n>d`: a whole number of days, at least 1. */
function parseOlderThan(value: string | undefined): number {
  const match = /^(\d{1,5})d$/.exec(value ?? '');
  if (!match || Number(match[1]) < 1) {
    throw new UsageError('--older-than must be a number of days, e.g. 90d');
  }
  return Number(match[1]);
}

/** Tools read from the store a page at a time. */
const STALE_PAGE = 100;

/** The live tools verified before `before`, oldest check first (ties by slug). */
async function verifiedBefore(store: CatalogStore, before: string): Promise<Tool[]> {
  const tools: Tool[] = [];
  for (let page = 1; ; page++) {
    const { items, total } = await store.listTools({
      page,
      limit: STALE_PAGE,
      verifiedBefore: before,
      sort: 'name',
    });
    tools.push(...items);
    if (items.length < STALE_PAGE || tools.length >= total) break;
  }
  // Canonical instants (and slugs) order as text.
  const key = (tool: Tool) => `${tool.verifiedAt} ${tool.slug}`;
  return tools.sort((a, b) => (key(a) < key(b) ? -1 : 1));
}

const staleCommand: Command = {
  name: 'stale',
  summary: 'list the tools whose facts were last checked too long ago',
  synopsis: '--older-than <n>d',
  description: `Lists the live tools whose verifiedAt (when their facts were last checked at their source)
is more than n days ago, as GET /v1/tools?verifiedBefore= does: the records to check again.
Prints JSON: {"olderThan": "<n>d", "before": <the instant n days ago>, "tools": [{slug, name,
source, verifiedAt}, …]}, the oldest check first. Check each at its source, then import it with
the new verifiedAt: that takes it off the list (a record imported without one keeps its own).

${STORE}`,
  options: {
    'older-than': { value: '<n>d', description: 'how old a check may be, in days (at least 1d)' },
  },
  failures: 'the store cannot be reached',
  run: async ({ values }) => {
    const days = parseOlderThan(values['older-than']);
    const before = formatInstant(Date.now() - days * DAY_MS);
    return withCatalog(async (store) => {
      const tools = await verifiedBefore(store, before);
      return {
        olderThan: `${days}d`,
        before,
        tools: tools.map(({ slug, name, source, verifiedAt }) => ({
          slug,
          name,
          source,
          verifiedAt,
        })),
      };
    });
  },
};

/** A whole number from `min` to `max`, or the default when the option is not given. */
function wholeNumber(
  name: string,
  value: string | undefined,
  min: number,
  max: number,
  fallback: number,
) {
  if (value === undefined) return fallback;
  const n = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max))
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}`);
  return n;
}

const gapsCommand: Command = {
  name: 'gaps',
  summary: 'the searches that found nothing, across every key',
  synopsis: '[--days <n>] [--limit <n>]',
  description: `Lists what people searched for and did not find, over the last n UTC days (today included),
across every key: the tools the catalog may be missing. From the gateways' search analytics
(SEARCH_ANALYTICS), which the key store keeps 30 days: run it with the gateway's store settings
(MONGODB_URI and MONGODB_DB, else DATA_DIR's keys.db). Prints JSON: {"days": n, "queries":
[{query, count, keys, lastAt}, …]}, most frequent first: count is the searches of the query that
found nothing, keys how many distinct keys made them (never which), lastAt the last of them.`,
  options: {
    days: { value: '<n>', description: 'the last n UTC days, 1 to 30 (default 30)' },
    limit: { value: '<n>', description: 'at most n queries, 1 to 1000 (default 100)' },
  },
  failures: 'the store cannot be reached',
  run: async ({ values }) => {
    const days = wholeNumber('days', values.days, 1, SEARCH_ANALYTICS_RETENTION_DAYS, 30);
    const limit = wholeNumber('limit', values.limit, 1, 1000, 100);
    const now = Date.now();
    const fromDay = new Date(now - (now % DAY_MS) - (days - 1) * DAY_MS).toISOString().slice(0, 10);
    const config = loadConfig(CatalogCliConfigSchema, process.env, redisProblems);
    const keys = await openKeyStore(config);
    try {
      return { days, queries: await keys.searches.gaps(fromDay, limit) };
    } finally {
      await keys.close();
    }
  },
};

export const catalogCommands: Command = {
  name: 'catalog',
  summary: 'import, delete, export, list stale tools and search gaps (catalog image)',
  description: `Changes and exports the catalog of the running system, as the admin endpoints do, and lists
the tools whose facts are due for a check and the searches that found nothing.

${STORE}`,
  subcommands: [importCommand, deleteCommand, exportCommand, staleCommand, gapsCommand],
};
