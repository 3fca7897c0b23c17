import { type Static, Type } from '@sinclair/typebox';
import { isWellFormedKey, keyDigest } from '../keys/api-key';
import type { KeyRecord, KeyStore } from '../keys/key-store';
import { secretState } from '../keys/secret-lifecycle';

/** The most tokens one report may hold (413 past it). */
export const MAX_LEAKED_TOKENS = 1_000;

/** One token found by a secret scanner, in GitHub's secret-scanning partner format. */
export const LeakedToken = Type.Object(
  {
    token: Type.String({ maxLength: 1_000, description: 'The secret as found' }),
    type: Type.String({ maxLength: 200, description: 'The secret type the scanner matched' }),
    url: Type.String({ maxLength: 2_000, description: 'Where it was found' }),
    source: Type.String({ maxLength: 200, description: 'What kind of place (content, commit, …)' }),
  },
  { additionalProperties: true },
);

export const LeakReport = Type.Array(LeakedToken, {
  $id: 'LeakReport',
  description: `At most ${MAX_LEAKED_TOKENS} tokens found by a secret scanner`,
});
export type LeakReport = Static<typeof LeakReport>;

export const LeakVerdicts = Type.Array(
  Type.Object({
    token_raw: Type.String(),
    token_type: Type.String(),
    label: Type.Union([Type.Literal('true_positive'), Type.Literal('false_positive')]),
  }),
  { $id: 'LeakVerdicts', description: 'One verdict per token, in the order of the report' },
);
export type LeakVerdicts = Static<typeof LeakVerdicts>;

export interface LeakOutcome {
  verdicts: LeakVerdicts;
  /** Keys changed by the report, each once with where its secret was found: to announce. */
  changed: { record: KeyRecord; url: string }[];
}

/**
 * Acts on a verified leak report: each token that is a working secret of this service (as the
 * report came in) ends now with the reason `leaked` and where it was found. A key's current secret
 * revokes the key (nothing it could do is left to the finder); a previous secret in its grace ends
 * alone, its key working on with the secret that replaced it. Anything else (not our format,
 * unknown, already ended) is a false positive and changes nothing.
 */
export async function actOnLeakReport(
  store: KeyStore,
  report: LeakReport,
  address: string | null,
): Promise<LeakOutcome> {
  const actor = { by: 'leak_report', address } as const;
  // Every token judged first, so that one secret ended by the report does not hide another.
  const working = new Map<string, { keyId: string; kind: 'current' | 'previous'; url: string }>();
  for (const { token, url } of report) {
    if (working.has(token) || !isWellFormedKey(token)) continue;
    const digest = keyDigest(token);
    const match = await store.findByDigest(digest);
    const kind = match && secretState(match, digest, Date.now()).kind;
    if (kind === 'current' || kind === 'previous') {
      working.set(token, { keyId: match!.record.id, kind, url });
    }
  }
  const changed = new Map<string, { record: KeyRecord; url: string }>();
  const revoked = new Set(
    [...working.values()].flatMap(({ keyId, kind }) => (kind === 'current' ? [keyId] : [])),
  );
  for (const [token, { keyId, kind, url }] of working) {
    // A previous secret of a key the report revokes ends with it.
    if (kind === 'previous' && revoked.has(keyId)) continue;
    const record =
      kind === 'current'
        ? await store.update(
            keyId,
            { revokedAt: new Date().toISOString(), revokedReason: 'leaked', revokedUrl: url },
            actor,
          )
        : await store.endPreviousSecret(keyId, keyDigest(token), 'leaked', url, actor);
    if (record) changed.set(record.id, { record, url });
  }
  return {
    verdicts: report.map(({ token, type }) => ({
      token_raw: token,
      token_type: type,
      label: working.has(token) ? 'true_positive' : 'false_positive',
    })),
    changed: [...changed.values()],
  };
}
