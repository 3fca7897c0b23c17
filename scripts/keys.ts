import { parseArgs } from 'node:util';
import { Type } from '@sinclair/typebox';
import { loadConfig } from '../services/shared/config';
import { TIERS, type Tier, isTier } from '../services/shared/tiers';
import { GatewayConfigSchema, quotasFrom } from '../gateway/src/config';
import { openKeyStore } from '../gateway/src/dependencies';
import { KEY_PREFIX, keyDigest } from '../gateway/src/keys/api-key';
import { issueKey } from '../gateway/src/keys/issue-key';
import { announcementFailed } from '../services/shared/change-feed/change-feed';
import { createChangeFeed } from '../services/shared/change-feed/create-change-feed';
import { EmailTakenError, type KeyRecord, type KeyStore } from '../gateway/src/keys/key-store';
import { redisConnector } from '../services/shared/redis';
import { REDIS_SETTINGS, redisProblems } from '../services/shared/redis-config';
import { isStorageFull } from '../services/shared/embedded/storage-space';
import { Errors } from '../services/shared/errors';

const USAGE = `Usage: npm run keys -- <command>
  create --tier <free|pro|enterprise> --email <email> --name <name> [--use-case <text>]
  list
  revoke <apiKey|keyId>
  set-tier <apiKey|keyId> <free|pro|enterprise>
Works against the running system's store (MONGODB_URI, else DATA_DIR); every running
gateway applies a change within a second (through Redis when there is Redis).`;

/** The settings the CLI shares with the gateway; no secret is needed to manage keys. */
const CliConfigSchema = Type.Pick(GatewayConfigSchema, [
  'MONGODB_URI',
  'MONGODB_DB',
  'DATA_DIR',
  ...REDIS_SETTINGS,
  'QUOTA_FREE',
  'QUOTA_PRO',
  'QUOTA_ENTERPRISE',
]);

class UsageError extends Error {}

/** Exit status of a change that could not be stored for now (sysexits' EX_TEMPFAIL). */
const EXIT_TRY_AGAIN_LATER = 75;

function summary(record: KeyRecord) {
  return {
    keyId: record.id,
    tier: record.tier,
    email: record.email,
    name: record.name,
    status: record.revokedAt ? 'revoked' : 'active',
    createdAt: record.createdAt,
    revokedAt: record.revokedAt,
  };
}

async function resolve(store: KeyStore, ref: string | undefined): Promise<KeyRecord> {
  if (!ref) throw new UsageError('Give an API key or a key id');
  const record = await store.find(ref.startsWith(KEY_PREFIX) ? keyDigest(ref) : ref);
  if (!record)
    throw new Error(`No key matches '${ref.startsWith(KEY_PREFIX) ? `${ref.slice(0, 8)}…` : ref}'`);
  return record;
}

function parseTier(value: string | undefined): Tier {
  if (!isTier(value)) throw new UsageError(`Tier must be one of ${TIERS.join(', ')}`);
  return value;
}

async function main(argv: string[]): Promise<unknown> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tier: { type: 'string' },
      email: { type: 'string' },
      name: { type: 'string' },
      'use-case': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help) return USAGE;
  if (!command) throw new UsageError('');

  const config = loadConfig(CliConfigSchema, process.env, redisProblems);
  const store = await openKeyStore(config);
  // Queues its one PUBLISH until connected, instead of failing while it connects.
  const redis = redisConnector(config)?.connect('keys-cli', { queueWhileDisconnected: true });
  // A Redis that cannot be reached fails the announcement, which the output reports once.
  redis?.on('error', () => undefined);
  const changes = createChangeFeed({
    dataDir: config.DATA_DIR,
    redis: redis && { publisher: redis },
  });
  // A stored change whose announcement fails is still a success: every gateway reads it from the
  // store's change log within a second. The output says so instead of failing.
  const announce = async ({ digest, id, tier, revokedAt }: KeyRecord) => {
    try {
      await changes.publish('keys', digest);
      const status = { keyId: id, tier, revoked: revokedAt !== null };
      await changes.publish('key-status', JSON.stringify(status));
      return {};
    } catch (err) {
      return {
        warnings: [
          announcementFailed(err, 'every gateway applies it from the key store within a second'),
        ],
      };
    }
  };

  try {
    switch (command) {
      case 'create': {
        const tier = parseTier(values.tier ?? 'free');
        const { email, name } = values;
        if (!email || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email))
          throw new UsageError('--email needs a valid address');
        if (!name?.trim()) throw new UsageError('--name is required');
        let issued;
        try {
          issued = await issueKey(store, {
            tier,
            email,
            name: name.trim(),
            useCase: values['use-case'] ?? '',
          });
        } catch (err) {
          if (err instanceof EmailTakenError) {
            throw new Error(`An active key already exists for ${email}`, { cause: err });
          }
          throw err;
        }
        const { apiKey, record } = issued;
        return {
          apiKey,
          ...summary(record),
          dailyLimit: quotasFrom(config)[tier],
          ...(await announce(record)),
        };
      }
      case 'list':
        return (await store.list()).map(summary);
      case 'revoke': {
        const record = await resolve(store, rest[0]);
        const updated = record.revokedAt
          ? record
          : await store.update(record.id, { revokedAt: new Date().toISOString() });
        return { ...summary(updated ?? record), ...(await announce(updated ?? record)) };
      }
      case 'set-tier': {
        const record = await resolve(store, rest[0]);
        const updated = await store.update(record.id, { tier: parseTier(rest[1]) });
        return { ...summary(updated ?? record), ...(await announce(updated ?? record)) };
      }
      default:
        throw new UsageError(`Unknown command '${command}'`);
    }
  } finally {
    await store.close();
    await changes.close();
    redis?.disconnect();
  }
}

main(process.argv.slice(2)).then(
  (result) => {
    if (result === USAGE) return console.log(USAGE);
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
    console.error(JSON.stringify({ error: err.message }));
    process.exit(1);
  },
);
