import { Type } from '@sinclair/typebox';
import { GatewayConfigSchema, quotasFrom } from '../../gateway/src/config';
import { openKeyStore } from '../../gateway/src/dependencies';
import { KEY_PREFIX, keyDigest } from '../../gateway/src/keys/api-key';
import { issueKey, rollKey } from '../../gateway/src/keys/issue-key';
import { checkKeyRequest } from '../../gateway/src/keys/key-request';
import { announceKeyChange } from '../../gateway/src/keys/key-change';
import { KEY_CHANGE_POLL_MS } from '../../gateway/src/keys/follow-key-changes';
import {
  DEFAULT_GRACE_SECONDS,
  EmailTakenError,
  type KeyRecord,
  type KeyStore,
  MAX_GRACE_SECONDS,
} from '../../gateway/src/keys/key-store';
import { announcementFailed } from '../../services/shared/change-feed/change-feed';
import { commandLineChangeFeed } from '../../services/shared/change-feed/create-change-feed';
import { loadConfig } from '../../services/shared/config';
import { redisProblems } from '../../services/shared/redis-config';
import { TIERS, type Tier, isTier } from '../../services/shared/tiers';
import { type Command, STORE_SETTINGS, UsageError } from './command-line';

/** The quotas give the printed dailyLimit. */
const KeysConfigSchema = Type.Pick(GatewayConfigSchema, [
  ...STORE_SETTINGS,
  'QUOTA_FREE',
  'QUOTA_PRO',
  'QUOTA_ENTERPRISE',
]);

const STORE = `Works against the running system's store (MONGODB_URI, else DATA_DIR); every running
gateway applies a change within a second (through Redis when there is Redis). Run it with the
gateway's environment: QUOTA_FREE, QUOTA_PRO and QUOTA_ENTERPRISE give the printed dailyLimit.`;

const KEY_JSON = `Prints the key as JSON: keyId, tier, dailyLimit (the tier's daily quota), email, name,
status (active or revoked), createdAt, revokedAt, revokedReason (revoked, or leaked when a leak
report ended it) and revokedUrl (where it was found), previousKeyExpiresAt (until when the secret before
the last roll works; null when none); and warnings when the change could not be announced (it is
stored all the same).`;

const NO_MATCH = 'no key matches, the store cannot be reached';

/** The store, the quotas and the announcement of a change, for one command's run. */
interface KeysContext {
  store: KeyStore;
  dailyLimit: (tier: Tier) => number;
  /** Tells every gateway about the change; its result joins the command's output. */
  announce: (record: KeyRecord) => Promise<{ warnings?: string[] }>;
}

async function withKeys<T>(work: (context: KeysContext) => Promise<T>): Promise<T> {
  const config = loadConfig(KeysConfigSchema, process.env, redisProblems);
  const store = await openKeyStore(config);
  // Every gateway reads the key store's change log as often: an announcement that has not gone
  // out by then is given up, and reported once, in the output.
  const changes = commandLineChangeFeed(config, 'keys-cli', KEY_CHANGE_POLL_MS);
  // A stored change whose announcement fails is still a success: every gateway reads it from the
  // store's change log within a second. The output says so instead of failing.
  const announce = async (record: KeyRecord) => {
    try {
      await announceKeyChange(changes, record);
      return {};
    } catch (err) {
      return {
        warnings: [
          announcementFailed(err, 'every gateway applies it from the key store within a second'),
        ],
      };
    }
  };
  const quotas = quotasFrom(config);
  try {
    return await work({ store, dailyLimit: (tier) => quotas[tier], announce });
  } finally {
    await store.close();
    await changes.close();
  }
}

/** A key as the CLI prints it: never its digest, with its tier's daily quota. */
function summary(record: KeyRecord, dailyLimit: KeysContext['dailyLimit']) {
  return {
    keyId: record.id,
    tier: record.tier,
    dailyLimit: dailyLimit(record.tier),
    email: record.email,
    name: record.name,
    status: record.revokedAt ? 'revoked' : 'active',
    createdAt: record.createdAt,
    revokedAt: record.revokedAt,
    // `leaked` when a leak report revoked it, with where the secret was found.
    revokedReason: record.revokedReason,
    revokedUrl: record.revokedUrl,
    // A rolled key's earlier secret works until then; null when there is none.
    previousKeyExpiresAt: record.previousExpiresAt,
  };
}

/** A key by its id, or by any of its secrets: current, previous or ended (the lifecycle's lookup). */
async function resolve(store: KeyStore, ref: string): Promise<KeyRecord> {
  const record = ref.startsWith(KEY_PREFIX)
    ? (await store.findByDigest(keyDigest(ref)))?.record
    : await store.find(ref);
  if (!record)
    throw new Error(`No key matches '${ref.startsWith(KEY_PREFIX) ? `${ref.slice(0, 8)}…` : ref}'`);
  return record;
}

function parseTier(value: string | undefined): Tier {
  if (!isTier(value)) throw new UsageError(`Tier must be one of ${TIERS.join(', ')}`);
  return value;
}

const TIER_VALUE = `<${TIERS.join('|')}>`;

const create: Command = {
  name: 'create',
  summary: 'issue a key; it is printed once',
  synopsis: '--email <email> --name <name> [--tier <tier>] [--use-case <text>]',
  description: `Issues an API key for one email address, which holds no other active key. The key
(apiKey) is printed once and stored nowhere: hand it over now. The email, name and use case are
checked as registration (POST /v1/register) checks them, with the same messages.

${KEY_JSON}

${STORE}`,
  options: {
    tier: { value: TIER_VALUE, description: "the key's tier", default: 'free' },
    email: { value: '<email>', description: 'who the key is for: an email address' },
    name: { value: '<name>', description: 'their name, 1 to 100 characters after trimming' },
    'use-case': { value: '<text>', description: 'what the key is for, at most 1000 characters' },
  },
  failures: `an active key already exists for the email, the store cannot be reached`,
  writes: true,
  run: async ({ values }) => {
    const tier = parseTier(values.tier);
    const checked = checkKeyRequest({
      email: values.email,
      name: values.name,
      useCase: values['use-case'],
    });
    if (!checked.ok) throw new UsageError(checked.error);
    const { email, name, useCase = '' } = checked.request;
    return withKeys(async ({ store, dailyLimit, announce }) => {
      let issued;
      try {
        issued = await issueKey(store, { tier, email, name, useCase });
      } catch (err) {
        if (err instanceof EmailTakenError) {
          throw new Error(`An active key already exists for ${email}`, { cause: err });
        }
        throw err;
      }
      const { apiKey, record } = issued;
      return { apiKey, ...summary(record, dailyLimit), ...(await announce(record)) };
    });
  },
};

const list: Command = {
  name: 'list',
  summary: 'every key, active and revoked',
  description: `Prints every key as a JSON array, each as keyId, tier, dailyLimit, email, name,
status, createdAt, revokedAt, revokedReason, revokedUrl and previousKeyExpiresAt (never the key itself, which is not stored).

${STORE}`,
  failures: 'the store cannot be reached',
  run: () =>
    withKeys(async ({ store, dailyLimit }) =>
      (await store.list()).map((record) => summary(record, dailyLimit)),
    ),
};

const revoke: Command = {
  name: 'revoke',
  summary: 'revoke a key, by the key itself or its keyId',
  synopsis: '<key>',
  description: `Revokes a key, given as the key itself (tdk_…) or its keyId: every gateway refuses
it within a second, and its email may register again. Revoking a revoked key changes nothing.

${KEY_JSON}

${STORE}`,
  arguments: ['key'],
  failures: NO_MATCH,
  writes: true,
  run: ({ args: [ref = ''] }) =>
    withKeys(async ({ store, dailyLimit, announce }) => {
      const record = await resolve(store, ref);
      const updated =
        (record.revokedAt
          ? record
          : await store.update(record.id, { revokedAt: new Date().toISOString() })) ?? record;
      return { ...summary(updated, dailyLimit), ...(await announce(updated)) };
    }),
};

const setTier: Command = {
  name: 'set-tier',
  summary: "change a key's tier (and so its daily quota)",
  synopsis: `<key> ${TIER_VALUE}`,
  description: `Moves a key, given as the key itself (tdk_…) or its keyId, to another tier: every
gateway applies the new tier's quota and data within a second. A revoked key cannot change tier.

${KEY_JSON}

${STORE}`,
  arguments: ['key', 'tier'],
  failures: `${NO_MATCH}, the key is revoked`,
  writes: true,
  run: ({ args: [ref = '', tierName] }) => {
    const tier = parseTier(tierName);
    return withKeys(async ({ store, dailyLimit, announce }) => {
      const record = await resolve(store, ref);
      const updated = (await store.update(record.id, { tier })) ?? record;
      return { ...summary(updated, dailyLimit), ...(await announce(updated)) };
    });
  },
};

const roll: Command = {
  name: 'roll',
  summary: 'a new secret for a key, the old one working for a grace period',
  synopsis: '<key> [--grace-seconds <n>]',
  description: `Gives a key, given as the key itself (tdk_…) or its keyId, a new secret: the same
keyId, tier, quota of the day and webhook subscriptions. The new key (apiKey) is printed once. The
old secret keeps working until previousKeyExpiresAt (--grace-seconds from now; 0 revokes it at
once, for a leaked key); a secret of an earlier roll stops at once. Every gateway applies it
within a second. A revoked key cannot be rolled.

Prints apiKey and the key as keyId, tier, dailyLimit, email, name, status, createdAt,
revokedAt, revokedReason, revokedUrl and previousKeyExpiresAt; and warnings when the change could not be announced (it is stored all
the same).

${STORE}`,
  arguments: ['key'],
  options: {
    'grace-seconds': {
      value: '<n>',
      description: `how long the old secret keeps working, 0 to ${MAX_GRACE_SECONDS}`,
      default: String(DEFAULT_GRACE_SECONDS),
    },
  },
  failures: `${NO_MATCH}, the key is revoked`,
  writes: true,
  run: ({ args: [ref = ''], values }) => {
    const graceSeconds = Number(values['grace-seconds']);
    if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_GRACE_SECONDS) {
      throw new UsageError(`--grace-seconds must be an integer from 0 to ${MAX_GRACE_SECONDS}`);
    }
    return withKeys(async ({ store, dailyLimit, announce }) => {
      const record = await resolve(store, ref);
      const rolled = await rollKey(store, record.id, graceSeconds);
      if (rolled === null) throw new Error(`No key matches '${record.id}'`);
      return {
        apiKey: rolled.apiKey,
        ...summary(rolled.record, dailyLimit),
        previousKeyExpiresAt: rolled.previousKeyExpiresAt,
        ...(await announce(rolled.record)),
      };
    });
  },
};

export const keysCommands: Command = {
  name: 'keys',
  summary: 'issue, list, revoke, re-tier and roll API keys (gateway image)',
  description: `Manages the API keys of the running system.

${STORE}`,
  subcommands: [create, list, revoke, setTier, roll],
};
