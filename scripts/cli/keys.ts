import { Type } from '@sinclair/typebox';
import { GatewayConfigSchema, quotasFrom } from '../../services/gateway/src/config';
import { openKeyStore } from '../../services/gateway/src/dependencies';
import { KEY_PREFIX, keyDigest } from '../../services/gateway/src/keys/api-key';
import { issueKey, rollKey } from '../../services/gateway/src/keys/issue-key';
import { checkKeyRequest } from '../../services/gateway/src/keys/key-request';
import { announceKeyChange } from '../../services/gateway/src/keys/key-change';
import { parseAllowedAddresses } from '../../services/gateway/src/keys/allowed-addresses';
import { KEY_CHANGE_POLL_MS } from '../../services/gateway/src/keys/follow-key-changes';
import { listedEvents } from '../../services/gateway/src/keys/key-events';
import {
  DEFAULT_GRACE_SECONDS,
  EmailTakenError,
  KEY_EVENT_TYPES,
  KEY_EVENTS_RETENTION_DAYS,
  type KeyRecord,
  KeyRevokedError,
  type KeyStore,
  MAX_GRACE_SECONDS,
} from '../../services/gateway/src/keys/key-store';
import { SCOPES, type Scope, isScope } from '../../services/shared/contract';
import { announcementFailed } from '../../services/shared/change-feed/change-feed';
import { commandLineChangeFeed } from '../../services/shared/change-feed/create-change-feed';
import { loadConfig } from '../../services/shared/config';
import { redisProblems } from '../../services/shared/redis-config';
import { TIERS, type Tier, isTier } from '../../services/shared/tiers';
import {
  type Command,
  type Invocation,
  type Option,
  STORE_SETTINGS,
  UsageError,
} from './command-line';

/** The quotas give the printed dailyLimit. */
const KeysConfigSchema = Type.Pick(GatewayConfigSchema, [
  ...STORE_SETTINGS,
  'QUOTA_FREE',
  'QUOTA_PRO',
  'QUOTA_ENTERPRISE',
  'KEY_MAX_LIFETIME_DAYS',
]);

const STORE = `Works against the running system's store (MONGODB_URI, else DATA_DIR); every running
gateway applies a change within a second (through Redis when there is Redis). Run it with the
gateway's environment: QUOTA_FREE, QUOTA_PRO and QUOTA_ENTERPRISE give the printed dailyLimit.`;

const KEY_JSON = `Prints the key as JSON: keyId, tier, dailyLimit (the tier's daily quota), email, name,
status (active or revoked), createdAt, revokedAt, revokedReason (revoked, or leaked when a leak
report ended it) and revokedUrl (where it was found), previousKeyExpiresAt (until when the secret before
the last roll works; null when none), expiresAt (when the key stops working; null: never),
lastUsedAt (the minute of its last request that took a unit), scopes and allowedAddresses (null:
unrestricted); and warnings when the change could not be announced (it is
stored all the same).`;

const NO_MATCH = 'no key matches, the store cannot be reached';

/** The store, the quotas and the announcement of a change, for one command's run. */
interface KeysContext {
  store: KeyStore;
  /** KEY_MAX_LIFETIME_DAYS. */
  maxLifetimeDays: number | undefined;
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
    return await work({
      store,
      maxLifetimeDays: config.KEY_MAX_LIFETIME_DAYS,
      dailyLimit: (tier) => quotas[tier],
      announce,
    });
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
    expiresAt: record.expiresAt,
    lastUsedAt: record.lastUsedAt,
    scopes: record.scopes,
    allowedAddresses: record.allowedAddresses,
  };
}

const DAY_MS = 86_400_000;

/** `--expires-at <ISO 8601>` or `--expires-in <n>d` (`none` clears); undefined when neither. */
function parseEnd(values: Invocation['values'], now = Date.now()): string | null | undefined {
  const at = values['expires-at'];
  const within = values['expires-in'];
  if (at !== undefined && within !== undefined) {
    throw new UsageError('Give --expires-at or --expires-in, not both');
  }
  if (at === 'none' || within === 'none') return null;
  if (at !== undefined) {
    const time = Date.parse(at);
    if (!/^\d{4}-\d\d-\d\dT/.test(at) || Number.isNaN(time)) {
      throw new UsageError('--expires-at must be an ISO 8601 instant, e.g. 2027-01-31T00:00:00Z');
    }
    if (time <= now) throw new UsageError('--expires-at must be in the future');
    return new Date(time).toISOString();
  }
  if (within !== undefined)
    return new Date(now + parseDays(within, '--expires-in') * DAY_MS).toISOString();
  return undefined;
}

/** `<n>d`: a whole number of days, at least 1. */
function parseDays(value: string, option: string): number {
  const match = /^(\d{1,5})d$/.exec(value);
  if (!match || Number(match[1]) < 1)
    throw new UsageError(`${option} must be a number of days, e.g. 90d`);
  return Number(match[1]);
}

/** `--scopes a,b` (`none` clears: everything the tier allows); undefined when not given. */
function parseScopes(value: string | undefined): Scope[] | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  const scopes = value.split(',').map((scope) => scope.trim());
  const unknown = scopes.filter((scope) => !isScope(scope));
  if (unknown.length > 0 || scopes.length === 0) {
    throw new UsageError(`--scopes takes a comma-separated list of ${SCOPES.join(', ')} (or none)`);
  }
  return [...new Set(scopes as Scope[])];
}

/** `--allow-ips 203.0.113.7,10.0.0.0/8` (`none` clears); undefined when not given. */
function parseAllowed(value: string | undefined): string[] | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  try {
    return parseAllowedAddresses(value.split(','));
  } catch (err) {
    throw new UsageError(`--allow-ips: ${(err as Error).message}`);
  }
}

const RESTRICTION_OPTIONS: Record<string, Option> = {
  'expires-at': { value: '<ISO 8601>', description: 'when the key stops working (none: never)' },
  'expires-in': { value: '<n>d', description: 'the same, in days from now' },
  scopes: {
    value: '<scope,…>',
    description: `restrict the key to these scopes: ${SCOPES.join(', ')} (none: unrestricted)`,
  },
  'allow-ips': {
    value: '<ip|cidr,…>',
    description: 'restrict the key to these client addresses (none: any)',
  },
};

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
    ...RESTRICTION_OPTIONS,
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
    const expiresAt = parseEnd(values);
    const scopes = parseScopes(values.scopes);
    const allowedAddresses = parseAllowed(values['allow-ips']);
    return withKeys(async ({ store, dailyLimit, announce, maxLifetimeDays }) => {
      let issued;
      try {
        issued = await issueKey(
          store,
          { tier, email, name, useCase, expiresAt, scopes, allowedAddresses },
          { maxLifetimeDays },
        );
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

const update: Command = {
  name: 'update',
  summary: "change a key's end, scopes or allowed addresses",
  synopsis:
    '<key> [--expires-at <ISO 8601> | --expires-in <n>d] [--scopes <scope,…>] [--allow-ips <ip|cidr,…>]',
  description: `Restricts a key, given as the key itself (tdk_…) or its keyId: when it stops working,
the scopes it may use, the client addresses it may be used from (none for any option lifts that
restriction). Every gateway applies it within a second; a roll keeps it; the key's events record
it (restricted, by operator).

${KEY_JSON}

${STORE}`,
  arguments: ['key'],
  options: RESTRICTION_OPTIONS,
  failures: `${NO_MATCH}, the key is revoked`,
  writes: true,
  run: ({ args: [ref = ''], values }) => {
    const patch = {
      expiresAt: parseEnd(values),
      scopes: parseScopes(values.scopes),
      allowedAddresses: parseAllowed(values['allow-ips']),
    };
    const given = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    if (Object.keys(given).length === 0) {
      throw new UsageError(
        'Give at least one of --expires-at, --expires-in, --scopes, --allow-ips',
      );
    }
    return withKeys(async ({ store, dailyLimit, announce }) => {
      const record = await resolve(store, ref);
      let updated;
      try {
        updated = (await store.update(record.id, given)) ?? record;
      } catch (err) {
        if (err instanceof KeyRevokedError) throw new Error(err.message, { cause: err });
        throw err;
      }
      return { ...summary(updated, dailyLimit), ...(await announce(updated)) };
    });
  },
};

const events: Command = {
  name: 'events',
  summary: "a key's changes of the last 90 days",
  synopsis: '<key>',
  description: `Prints the changes of a key, given as the key itself (tdk_…) or its keyId, of the last
${KEY_EVENTS_RETENTION_DAYS} days, newest first, as GET /v1/keys/events lists them: a JSON array of
{type, at, by, address, detail}, type one of ${KEY_EVENT_TYPES.join(', ')}.

${STORE}`,
  arguments: ['key'],
  failures: NO_MATCH,
  run: ({ args: [ref = ''] }) =>
    withKeys(async ({ store }) => {
      const record = await resolve(store, ref);
      const now = Date.now();
      const since = new Date(now - KEY_EVENTS_RETENTION_DAYS * DAY_MS).toISOString();
      return listedEvents(record, await store.events(record.id, since), now);
    }),
};

const list: Command = {
  name: 'list',
  summary: 'every key, active and revoked',
  synopsis: '[--unused-for <n>d]',
  options: {
    'unused-for': {
      value: '<n>d',
      description: 'only active keys not used for that many days (never used: since created)',
    },
  },
  description: `Prints every key as a JSON array, each as keyId, tier, dailyLimit, email, name,
status, createdAt, revokedAt, revokedReason, revokedUrl and previousKeyExpiresAt (never the key itself, which is not stored).

${STORE}`,
  failures: 'the store cannot be reached',
  run: ({ values }) => {
    const unusedFor = values['unused-for'];
    const cutoff =
      unusedFor === undefined
        ? undefined
        : new Date(Date.now() - parseDays(unusedFor, '--unused-for') * DAY_MS).toISOString();
    return withKeys(async ({ store, dailyLimit }) =>
      (await store.list())
        .filter(
          (record) =>
            cutoff === undefined ||
            (record.revokedAt === null && (record.lastUsedAt ?? record.createdAt) < cutoff),
        )
        .map((record) => summary(record, dailyLimit)),
    );
  },
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
    return withKeys(async ({ store, dailyLimit, announce, maxLifetimeDays }) => {
      const record = await resolve(store, ref);
      const rolled = await rollKey(store, record.id, graceSeconds, { maxLifetimeDays });
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
  subcommands: [create, list, revoke, setTier, roll, update, events],
};
