import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { EmbeddedKeyStore } from '../../../services/gateway/src/keys/embedded-key-store';
import {
  EmailTakenError,
  type KeyRecord,
  KeyRevokedError,
} from '../../../services/gateway/src/keys/key-store';
import { keyRecord } from '../../support/key-record';
import { tempDataDir } from '../../support/services';

const record = keyRecord;

describe('EmbeddedKeyStore (SQLite under DATA_DIR)', () => {
  test('create, find by digest or id, list, update', async () => {
    const store = new EmbeddedKeyStore(tempDataDir());
    const key = record();
    await store.create(key);
    expect(await store.findByDigest(key.digest)).toEqual({ record: key, ended: null });
    expect(await store.find(key.id)).toEqual(key);
    expect(await store.find(key.digest)).toEqual(key);
    expect(await store.findByDigest('unknown')).toBeNull();
    const retiered = await store.update(key.id, { tier: 'pro' });
    expect(retiered).toMatchObject({ id: key.id, tier: 'pro', revokedAt: null });
    expect(await store.list()).toEqual([retiered]);
    expect(await store.update('nope', { tier: 'pro' })).toBeNull();
    await store.close();
  });

  test('one active key per email, any case; a revoked key frees the email', async () => {
    const store = new EmbeddedKeyStore(tempDataDir());
    const first = record({ email: 'Same@Example.com' });
    await store.create(first);
    await expect(store.create(record({ email: 'same@example.COM' }))).rejects.toBeInstanceOf(
      EmailTakenError,
    );
    await store.update(first.id, { revokedAt: new Date().toISOString() });
    await expect(store.create(record({ email: 'same@example.com' }))).resolves.toBeUndefined();
    await store.close();
  });

  test('a revoked key cannot change tier (set-tier fails, nothing changes)', async () => {
    const store = new EmbeddedKeyStore(tempDataDir());
    const key = record();
    await store.create(key);
    await store.update(key.id, { revokedAt: new Date().toISOString() });
    await expect(store.update(key.id, { tier: 'enterprise' })).rejects.toBeInstanceOf(
      KeyRevokedError,
    );
    expect((await store.find(key.id))?.tier).toBe('free');
    await store.close();
  });

  test('api-keys.json of earlier versions is imported once, losing nothing', async () => {
    const dataDir = tempDataDir();
    const active = record({ email: 'dup@example.com' });
    // The old file store could write two active keys for one email: both must keep working.
    const duplicate = record({ email: 'DUP@example.com' });
    const revoked = record({ revokedAt: new Date().toISOString(), tier: 'pro' });
    // Keys of those versions had no rolls, revocation reasons or ends.
    const later = [
      'scopes',
      'allowedAddresses',
      'lastUsedAt',
      'revokedReason',
      'revokedUrl',
      'expiresAt',
      'previousDigest',
      'previousExpiresAt',
    ];
    const legacy = (key: KeyRecord) =>
      Object.fromEntries(Object.entries(key).filter(([field]) => !later.includes(field)));
    writeFileSync(
      path.join(dataDir, 'api-keys.json'),
      JSON.stringify({ version: 1, keys: [active, duplicate, revoked].map(legacy) }),
    );
    const store = new EmbeddedKeyStore(dataDir);
    for (const key of [active, duplicate]) {
      expect(await store.findByDigest(key.digest)).toEqual({ record: key, ended: null });
    }
    expect(await store.findByDigest(revoked.digest)).toEqual({
      record: { ...revoked, revokedReason: 'revoked' },
      ended: null,
    });
    expect(existsSync(path.join(dataDir, 'api-keys.json'))).toBe(false);
    expect(existsSync(path.join(dataDir, 'api-keys.json.imported'))).toBe(true);
    // The email stays held by the first active key only.
    await expect(store.create(record({ email: 'dup@example.com' }))).rejects.toBeInstanceOf(
      EmailTakenError,
    );
    await store.close();
    const reopened = new EmbeddedKeyStore(dataDir);
    expect(await reopened.list()).toHaveLength(3);
    await reopened.close();
  });

  test('kill -9 in the middle of writing: every answered write is there, the file is sound', async () => {
    const dataDir = tempDataDir();
    const entry = path.resolve(
      __dirname,
      '../../../dist/services/gateway/src/keys/embedded-key-store.js',
    );
    // A writer that prints each key's id once its create() has resolved, as the gateway answers 201.
    const child = spawn(
      process.execPath,
      [
        '-e',
        `const { EmbeddedKeyStore } = require(${JSON.stringify(entry)});
         const store = new EmbeddedKeyStore(${JSON.stringify(dataDir)});
         (async () => {
           for (let i = 0; ; i++) {
             const now = new Date().toISOString();
             const id = 'k' + i;
             await store.create({ id, digest: 'd' + i, tier: 'free', email: i + '@x.io', name: 'n',
               useCase: '', createdAt: now, updatedAt: now, revokedAt: null,
               revokedReason: null, revokedUrl: null, expiresAt: null,
               previousDigest: null, previousExpiresAt: null, scopes: null,
               allowedAddresses: null, lastUsedAt: null });
             process.stdout.write(id + '\\n');
           }
         })();`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const answered: string[] = [];
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      answered.push(...lines);
    });
    while (answered.length < 200) await new Promise((r) => setTimeout(r, 20));
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;

    const db = new Database(path.join(dataDir, 'keys.db'));
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    const ids = new Set(
      db
        .prepare<[], { id: string }>('SELECT id FROM api_keys')
        .pluck()
        .all() as unknown as string[],
    );
    db.close();
    expect(answered.filter((id) => !ids.has(id))).toEqual([]);
  });
});
