import {
  CHANGE_LOG_OVERLAP_MS,
  KEY_INDEXES,
  byDigestFilter,
  endPreviousUpdate,
  KEY_EVENT_INDEXES,
  keyEventDocuments,
  keyUseUpdates,
  keyChangesFilter,
  keyRollUpdate,
  keyUpdate,
  newKeyChanges,
  toSecretMatch,
} from '../../../services/gateway/src/keys/mongo-key-store';
import { ENDED_SECRETS_KEPT } from '../../../services/gateway/src/keys/key-store';

/**
 * The MongoDB key store's documents, checked without a server (none can run here; the contract
 * suite runs on MongoDB when MONGODB_URI is set): what each operation asks of the server.
 */
describe('MongoDB key store documents', () => {
  const now = '2026-05-01T12:00:00.000Z';

  test('a secret is looked up as the current one, the previous one or an ended one', () => {
    expect(byDigestFilter('d1')).toEqual({
      $or: [{ digest: 'd1' }, { previousDigest: 'd1' }, { 'endedSecrets.digest': 'd1' }],
    });
  });

  const document = {
    id: 'key_1',
    digest: 'cur',
    tier: 'pro' as const,
    email: 'a@b.c',
    name: 'A',
    useCase: '',
    createdAt: now,
    updatedAt: now,
    revokedAt: null,
    previousDigest: 'prev',
    previousExpiresAt: now,
    // As projected: without emailLower and active.
    endedSecrets: [{ digest: 'old', reason: 'rolled' as const, at: now, url: null }],
  };

  test('a document found by a secret: the record without its ended secrets, and which one matched', () => {
    const fields = Object.fromEntries(
      Object.entries(document).filter(([field]) => field !== 'endedSecrets'),
    );
    // Documents from before revocation reasons and expiry have neither.
    const record = {
      ...fields,
      revokedReason: null,
      revokedUrl: null,
      expiresAt: null,
      scopes: null,
      allowedAddresses: null,
      lastUsedAt: null,
    };
    expect(toSecretMatch(document, 'cur')).toEqual({ record, ended: null });
    expect(toSecretMatch(document, 'prev')).toEqual({ record, ended: null });
    expect(toSecretMatch(document, 'old')).toEqual({ record, ended: document.endedSecrets[0] });
    const revoked = { ...document, revokedAt: now };
    expect(toSecretMatch(revoked, 'cur').record.revokedReason).toBe('revoked');
  });

  test('a roll moves the current secret to previous in the same stage, on an active key only', () => {
    const later = '2026-05-02T12:00:00.000Z';
    const { filter, update } = keyRollUpdate('key_1', {
      digest: 'new',
      previousExpiresAt: later,
      now,
    });
    expect(filter).toEqual({ $or: [{ id: 'key_1' }, { digest: 'key_1' }], revokedAt: null });
    expect(update).toHaveLength(1);
    expect(update[0]!.$set).toMatchObject({
      previousDigest: '$digest',
      previousExpiresAt: later,
      digest: 'new',
      updatedAt: now,
    });
    // The previous secret (if any) ends, as of the end of its grace if that came first.
    expect(JSON.stringify(update[0]!.$set.endedSecrets)).toBe(
      JSON.stringify({
        $slice: [
          {
            $concatArrays: [
              {
                $cond: [
                  { $eq: [{ $ifNull: ['$previousDigest', null] }, null] },
                  [],
                  [
                    {
                      digest: '$previousDigest',
                      reason: 'rolled',
                      at: { $min: ['$previousExpiresAt', now] },
                      url: null,
                    },
                  ],
                ],
              },
              [],
              { $ifNull: ['$endedSecrets', []] },
            ],
          },
          ENDED_SECRETS_KEPT,
        ],
      }),
    );
    // No grace: the old secret is not kept as previous but ends now.
    const bare = keyRollUpdate('key_1', { digest: 'new', previousExpiresAt: now, now }).update;
    expect(bare[0]!.$set).toMatchObject({ previousDigest: null, previousExpiresAt: null });
    expect(bare[0]!.$set.endedSecrets.$slice[0].$concatArrays[1]).toEqual([
      { digest: '$digest', reason: 'rolled', at: now, url: null },
    ]);
  });

  test('a roll from a secret happens only while that secret is current (compare-and-set)', () => {
    const { filter } = keyRollUpdate('key_1', {
      digest: 'new',
      previousExpiresAt: now,
      now,
      ifCurrent: 'cur',
    });
    expect(filter).toEqual({
      $or: [{ id: 'key_1' }, { digest: 'key_1' }],
      revokedAt: null,
      digest: 'cur',
    });
  });

  test('a leaked previous secret ends alone, in the same document', () => {
    const ended = { digest: 'prev', reason: 'leaked' as const, at: now, url: 'https://x.test/1' };
    const { filter, update } = endPreviousUpdate('key_1', ended);
    expect(filter).toEqual({ id: 'key_1', previousDigest: 'prev' });
    expect(update[0]!.$set).toMatchObject({
      previousDigest: null,
      previousExpiresAt: null,
      updatedAt: now,
    });
    expect(update[0]!.$set.endedSecrets.$slice[0].$concatArrays[0]).toEqual([{ $literal: ended }]);
  });

  test('a previous secret is unique while there is one, and the change log is indexed', () => {
    expect(KEY_INDEXES).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          key: { previousDigest: 1 },
          unique: true,
          partialFilterExpression: { previousDigest: { $type: 'string' } },
        }),
        expect.objectContaining({ key: { updatedAt: 1 } }),
        expect.objectContaining({ key: { 'endedSecrets.digest': 1 } }),
      ]),
    );
  });

  test('a tier is never set on a revoked key; a revocation frees the email, keeping its reason', () => {
    expect(keyUpdate('key_1', { tier: 'pro' }, now)).toEqual({
      filter: { id: 'key_1', revokedAt: null },
      update: { $set: { tier: 'pro', updatedAt: now } },
    });
    expect(keyUpdate('key_1', { revokedAt: now }, now)).toEqual({
      filter: { id: 'key_1', revokedAt: null },
      update: {
        $set: {
          revokedAt: now,
          updatedAt: now,
          active: false,
          revokedReason: 'revoked',
          revokedUrl: null,
        },
      },
    });
    const leak = { revokedAt: now, revokedReason: 'leaked' as const, revokedUrl: 'https://x.test' };
    expect(keyUpdate('key_1', leak, now).update).toEqual({
      $set: { ...leak, updatedAt: now, active: false },
    });
  });

  test('the change log is read again over an overlap, and a change is reported once', () => {
    expect(keyChangesFilter(now)).toEqual({
      updatedAt: { $gte: new Date(Date.parse(now) - CHANGE_LOG_OVERLAP_MS).toISOString() },
    });
    const reported = new Map<string, string>();
    const rows = [
      { id: 'key_1', digest: 'd1', updatedAt: '2026-05-01T12:00:01.000Z' },
      { id: 'key_2', digest: 'd2', updatedAt: '2026-05-01T11:59:59.000Z' },
    ];
    expect(newKeyChanges(now, rows, reported)).toEqual({
      cursor: '2026-05-01T12:00:01.000Z',
      keyIds: ['key_1', 'key_2'],
      digests: ['d1', 'd2'],
    });
    // The same rows again (the overlap): nothing new; a later change of key_1 is.
    const again = [...rows, { id: 'key_1', digest: 'd3', updatedAt: '2026-05-01T12:00:02.000Z' }];
    expect(newKeyChanges('2026-05-01T12:00:01.000Z', again, reported)).toEqual({
      cursor: '2026-05-01T12:00:02.000Z',
      keyIds: ['key_1'],
      digests: ['d3'],
    });
  });

  test('a roll that sets an end sets it as a value, not an expression; one that does not leaves it', () => {
    const set = (expiresAt?: string | null) =>
      keyRollUpdate('key_1', {
        digest: 'new',
        previousExpiresAt: now,
        now,
        ...(expiresAt !== undefined && { expiresAt }),
      }).update[0]!.$set;
    expect(set('2026-06-01T00:00:00.000Z').expiresAt).toEqual({
      $literal: '2026-06-01T00:00:00.000Z',
    });
    expect(set(null).expiresAt).toEqual({ $literal: null });
    expect(set()).not.toHaveProperty('expiresAt');
  });

  test('last use: a conditional update per key, never touching updatedAt', () => {
    expect(keyUseUpdates([{ keyId: 'key_1', minute: now }])).toEqual([
      {
        updateOne: {
          filter: { id: 'key_1', $or: [{ lastUsedAt: null }, { lastUsedAt: { $lt: now } }] },
          update: { $set: { lastUsedAt: now } },
        },
      },
    ]);
  });

  test('key events: stored with a date MongoDB expires them by after 90 days', () => {
    const event = {
      type: 'revoked' as const,
      at: now,
      by: 'operator' as const,
      address: null,
      detail: {},
    };
    expect(keyEventDocuments('key_1', [event])).toEqual([
      { ...event, keyId: 'key_1', atDate: new Date(now) },
    ]);
    expect(KEY_EVENT_INDEXES).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: { keyId: 1, at: -1 } }),
        expect.objectContaining({ key: { atDate: 1 }, expireAfterSeconds: 90 * 86_400 }),
      ]),
    );
  });
});
