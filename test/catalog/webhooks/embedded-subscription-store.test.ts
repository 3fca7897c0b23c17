import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { EmbeddedSubscriptionStore } from '../../../services/catalog/src/webhooks/embedded-subscription-store';
import { MAX_SUBSCRIPTIONS_PER_KEY } from '../../../services/catalog/src/webhooks/webhook-types';
import { tempDataDir } from '../../support/services';

const STORE_MODULE = path.resolve(
  __dirname,
  '../../../dist/services/catalog/src/webhooks/embedded-subscription-store.js',
);

/**
 * One catalog process: waits for the common start time, then creates `count` subscriptions for
 * one key and prints how each went ("ok" or the error's name).
 */
const WRITER = `
const { EmbeddedSubscriptionStore } = require(process.env.STORE_MODULE);
const store = new EmbeddedSubscriptionStore(process.env.DATA_DIR);
const results = [];
(async () => {
  while (Date.now() < Number(process.env.START_AT)) await new Promise((r) => setTimeout(r, 1));
  for (let i = 0; i < Number(process.env.COUNT); i += 1) {
    const id = 'wh_' + process.pid + '_' + i;
    try {
      await store.create({ id, keyId: 'key-race', url: 'https://hooks.example.com/' + id,
        events: ['tool.created'], description: null, secret: 'whsec_eA==',
        createdAt: new Date().toISOString(), disabledAt: null });
      results.push('ok');
    } catch (err) {
      results.push(err.name + ': ' + err.message);
    }
  }
  await store.close();
  console.log(JSON.stringify(results));
})();
`;

describe('the embedded subscription store across processes', () => {
  test(`processes sharing DATA_DIR create at once: exactly ${MAX_SUBSCRIPTIONS_PER_KEY} for a key, the rest refused`, async () => {
    const dataDir = tempDataDir();
    // Opened first, so that the children race on the writes, not on creating the schema.
    const store = new EmbeddedSubscriptionStore(dataDir);
    const startAt = String(Date.now() + 1_500);
    const outputs = await Promise.all(
      [0, 1, 2, 3].map(() =>
        promisify(execFile)(process.execPath, ['-e', WRITER], {
          env: { STORE_MODULE, DATA_DIR: dataDir, START_AT: startAt, COUNT: '6' },
        }),
      ),
    );
    const results = outputs.flatMap(({ stdout }) => JSON.parse(stdout) as string[]);
    expect(results.filter((r) => r === 'ok')).toHaveLength(MAX_SUBSCRIPTIONS_PER_KEY);
    expect(results.filter((r) => r !== 'ok')).toEqual(
      new Array(24 - MAX_SUBSCRIPTIONS_PER_KEY).fill(
        `TooManySubscriptionsError: A key may hold at most ${MAX_SUBSCRIPTIONS_PER_KEY} webhook subscriptions`,
      ),
    );
    expect(await store.list('key-race')).toHaveLength(MAX_SUBSCRIPTIONS_PER_KEY);
    await store.close();
  }, 60_000);

  test('subscriptions and key statuses survive a restart', async () => {
    const dataDir = tempDataDir();
    const before = new EmbeddedSubscriptionStore(dataDir);
    const subscription = {
      id: 'wh_kept',
      keyId: 'key-a',
      url: 'https://hooks.example.com/kept',
      events: ['tool.deleted' as const],
      description: 'kept',
      secret: 'whsec_eA==',
      createdAt: '2025-01-01T00:00:00.000Z',
      disabledAt: null,
    };
    await before.create(subscription);
    await before.setKeyStatus({ keyId: 'key-a', tier: 'enterprise', revoked: false });
    await before.close();

    const after = new EmbeddedSubscriptionStore(dataDir);
    expect(await after.matching('tool.deleted')).toEqual([subscription]);
    await after.close();
  });
});
