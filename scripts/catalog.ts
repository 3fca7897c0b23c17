import { createWriteStream, readFileSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { Type } from '@sinclair/typebox';
import pino from 'pino';
import { openCatalogChanges } from '../services/catalog/src/changes/open-catalog-changes';
import { parseImport } from '../services/catalog/src/changes/import-file';
import { CatalogConfigSchema } from '../services/catalog/src/config';
import { loadDatasetMeta } from '../services/catalog/src/dataset';
import {
  EXPORT_FORMATS,
  type ExportFormat,
  encodeExport,
} from '../services/catalog/src/export/export-formats';
import { InvalidToolsError } from '../services/catalog/src/records/tool-validator';
import { createStore } from '../services/catalog/src/store/create-store';
import { loadConfig } from '../services/shared/config';
import { REDIS_SETTINGS, redisProblems } from '../services/shared/redis-config';
import { isStorageFull } from '../services/shared/embedded/storage-space';
import { Errors } from '../services/shared/errors';

const USAGE = `Usage: npm run catalog -- <command>
  import <file>                          upsert by slug: a JSON array, the JSON export, or NDJSON
  delete <slug>                          delete one tool (a tombstone keeps seeds from restoring it)
  export [--format ndjson|json|csv] [--out <file>]
                                         every tool with all its data (stdout unless --out)
Works against the running system's store (MONGODB_URI, else DATA_DIR); every running catalog
serves the change within a second (through Redis when there is Redis). Summaries are JSON on
stdout; an import with any invalid record changes nothing and exits 1.`;

/** The settings the CLI shares with the catalog; no secret is needed to change the catalog. */
const CliConfigSchema = Type.Pick(CatalogConfigSchema, [
  'MONGODB_URI',
  'MONGODB_DB',
  'DATA_DIR',
  ...REDIS_SETTINGS,
]);

class UsageError extends Error {}

/** Exit status of a change that could not be stored for now (sysexits' EX_TEMPFAIL). */
const EXIT_TRY_AGAIN_LATER = 75;

/** An unknown option or a missing value is a usage error (exit 2), like any other. */
function parseUsage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

async function main(argv: string[]): Promise<unknown> {
  const { positionals, values } = parseUsage(() =>
    parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        format: { type: 'string', default: 'ndjson' },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }),
  );
  const [command, argument] = positionals;
  if (values.help) return USAGE;
  if (!command) throw new UsageError('');

  const config = loadConfig(CliConfigSchema, process.env, redisProblems);
  const store = await createStore(config);
  const changes = await openCatalogChanges(config, store, pino({ level: 'warn' }, process.stderr), {
    follow: false,
  });
  try {
    switch (command) {
      case 'import': {
        if (!argument) throw new UsageError('Give the file to import');
        return await changes.service.upsert(parseImport(readFileSync(argument, 'utf8')));
      }
      case 'delete': {
        if (!argument) throw new UsageError('Give the slug of the tool to delete');
        const summary = await changes.service.delete(argument);
        if (!summary) throw new Error(`Tool '${argument}' not found`);
        return summary;
      }
      case 'export': {
        const format = values.format as ExportFormat;
        if (!EXPORT_FORMATS.includes(format)) {
          throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(', ')}`);
        }
        let total = 0;
        async function* counted() {
          for await (const tool of store.exportTools()) {
            total += 1;
            yield tool;
          }
        }
        const { body } = encodeExport(format, counted(), loadDatasetMeta().attribution);
        await pipeline(body, values.out ? createWriteStream(values.out) : process.stdout, {
          end: values.out !== undefined,
        });
        // The records went to stdout (or the file): the summary goes to stderr.
        process.stderr.write(
          `${JSON.stringify({ exported: total, format, version: store.version, out: values.out ?? 'stdout' })}\n`,
        );
        return undefined;
      }
      default:
        throw new UsageError(`Unknown command '${command}'`);
    }
  } finally {
    await changes.close();
    await store.close();
  }
}

main(process.argv.slice(2)).then(
  (result) => {
    if (result === USAGE) return console.log(USAGE);
    if (result === undefined) return;
    for (const warning of (result as { warnings?: string[] }).warnings ?? []) {
      console.error(JSON.stringify({ warning }));
    }
    console.log(JSON.stringify(result, null, 2));
  },
  (err: Error) => {
    if (err instanceof UsageError) {
      if (err.message) console.error(JSON.stringify({ error: err.message }));
      console.error(USAGE);
      process.exit(2);
    }
    if (isStorageFull(err)) {
      console.error(JSON.stringify({ error: new Errors.storageFull().message }));
      process.exit(EXIT_TRY_AGAIN_LATER);
    }
    const problems = err instanceof InvalidToolsError ? { problems: err.problems } : {};
    console.error(JSON.stringify({ error: err.message, ...problems }, null, 2));
    process.exit(1);
  },
);
