import {
  CHANGE_LOG_OVERLAP_MS,
  KEY_INDEXES,
  byDigestFilter,
  keyChangesFilter,
  keyRollUpdate,
  keyUpdate,
  newKeyChanges,
} from '../../gateway/src/keys/mongo-key-store';

/**
 * The MongoDB key store's documents, checked without a server (none can run here; the contract
 * suite runs on MongoDB when MONGODB_URI is set): what each operation asks of the server.
 */
describe('MongoDB key store documents', () => {
  const now = '2026-05-01T12:00:00.000Z';

  test('a secret is looked up as the current one, or as the previous one while its grace lasts', () => {
    expect(byDigestFilter('d1', now)).toEqual({
      $or: [{ digest: 'd1' }, { previousDigest: 'd1', previousExpiresAt: { $gt: now } }],
    });
  });

  test('a roll moves the current secret to previous in the same stage, on an active key only', () => {
    const later = '2026-05-02T12:00:00.000Z';
    expect(keyRollUpdate('key_1', { digest: 'new', previousExpiresAt: later, now })).toEqual({
      filter: { $or: [{ id: 'key_1' }, { digest: 'key_1' }], revokedAt: null },
      update: [
        {
          $set: {
            previousDigest: '$digest',
            previousExpiresAt: later,
            digest: 'new',
            updatedAt: now,
          },
        },
      ],
    });
    // No grace: the old secret is dropped, not kept until now.
    const update = keyRollUpdate('key_1', { digest: 'new', previousExpiresAt: now, now }).update;
    expect(update[0]!.$set).toMatchObject({ previousDigest: null, previousExpiresAt: null });
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
      ]),
    );
  });

  test('a tier is never set on a revoked key; a revocation frees the email', () => {
    expect(keyUpdate('key_1', { tier: 'pro' }, now)).toEqual({
      filter: { id: 'key_1', revokedAt: null },
      update: { $set: { tier: 'pro', updatedAt: now } },
    });
    expect(keyUpdate('key_1', { revokedAt: now }, now).update).toEqual({
      $set: { revokedAt: now, updatedAt: now, active: false },
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
});
