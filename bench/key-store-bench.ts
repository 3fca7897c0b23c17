import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import {
  EmbeddedKeyStore,
  KEYS_DATABASE_FILE,
} from '../services/gateway/src/keys/embedded-key-store';
import { issueKey } from '../services/gateway/src/keys/issue-key';
import { LocalChangeFeed } from '../services/shared/change-feed/local-change-feed';

const SIZES = [100, 100_000] as const;
const ROUND_MS = 2_000;
const ROUNDS = 3;

/** A DATA_DIR whose key store already holds `count` keys, written in one transaction. */
function prefilled(count: number): string {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bench-keys-'));
  new EmbeddedKeyStore(dataDir).close();
  const db = new Database(path.join(dataDir, KEYS_DATABASE_FILE));
  const insert = db.prepare(
    `INSERT INTO api_keys (id, digest, tier, email, name, use_case, created_at, updated_at,
       revoked_at, active_email) VALUES (?, ?, 'free', ?, 'Bench', '', ?, ?, NULL, ?)`,
  );
  const now = new Date().toISOString();
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const email = `prefill-${i}@bench.example`;
      insert.run(`key_prefill_${i}`, `digest_prefill_${i}`, email, now, now, email);
    }
  })();
  db.close();
  return dataDir;
}

let sequence = 0;

/** Registrations per second for ROUND_MS: a new key stored and announced, as POST /v1/register does. */
async function registrationRate(dataDir: string): Promise<number> {
  const store = new EmbeddedKeyStore(dataDir);
  const feed = new LocalChangeFeed(dataDir);
  const started = performance.now();
  let done = 0;
  while (performance.now() - started < ROUND_MS) {
    sequence += 1;
    const { record } = await issueKey(store, {
      tier: 'free',
      email: `bench-${sequence}@bench.example`,
      name: 'Bench',
      useCase: '',
    });
    await feed.publish('keys', record.digest);
    done += 1;
  }
  const rate = done / ((performance.now() - started) / 1000);
  await feed.close();
  await store.close();
  return rate;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/**
 * The embedded key store's registration rate at 100 and at 100,000 keys (hardening goal: the
 * larger store keeps >= 0.8 of the smaller one's rate). Rounds alternate between the sizes, so
 * a disturbance of the machine hits both; each size reports its median.
 */
export async function keyStoreBench() {
  const dirs = Object.fromEntries(SIZES.map((size) => [size, prefilled(size)]));
  const rates: Record<number, number[]> = { [SIZES[0]]: [], [SIZES[1]]: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const size of SIZES) rates[size]!.push(await registrationRate(dirs[size]!));
  }
  const [small, large] = SIZES.map((size) => Math.round(median(rates[size]!)));
  const ratio = Math.round((large! / small!) * 100) / 100;
  console.log('\nEmbedded key store: registrations per second (stored and announced, fsync each)');
  console.log(`  at ${SIZES[0]} keys: ${small}/s; at ${SIZES[1]} keys: ${large}/s`);
  console.log(`  ratio 100,000 : 100 = ${ratio} (goal >= 0.8)`);
  return { registrationsPerSecond: { small, large }, ratio };
}
