import type { EndReason, KeyRecord, KeyRoll, SecretMatch } from './key-store';

/**
 * The state of a presented secret, the one answer every path that accepts a key asks for (the
 * guard, and so the REST routes, MCP and the portal; leak reports; the keys CLI):
 * - `current`: the key's secret, which alone manages the key;
 * - `previous`: the secret before the last roll, working until `until` but managing nothing;
 * - `ended`: it works no more, with why and since when (docs/security.md, "The lifecycle of a
 *   secret").
 */
export type SecretState =
  | { readonly kind: 'current' }
  | { readonly kind: 'previous'; readonly until: string }
  | {
      readonly kind: 'ended';
      readonly reason: EndReason;
      readonly at: string;
      readonly url: string | null;
    };

const CURRENT: SecretState = { kind: 'current' };

/**
 * What a secret (by its digest) is now, from what the store holds of its key. Ended secrets are
 * told apart from unknown ones, so a client retrying an old secret learns why and is never taken
 * for someone guessing keys. Order matters: an ended secret stays ended with its own reason; a
 * revocation or the key's end ends its current and previous secret alike.
 */
export function secretState(
  { record, ended }: SecretMatch,
  digest: string,
  now: number,
): SecretState {
  if (ended !== null) return { kind: 'ended', reason: ended.reason, at: ended.at, url: ended.url };
  if (record.revokedAt !== null) {
    return {
      kind: 'ended',
      reason: record.revokedReason ?? 'revoked',
      at: record.revokedAt,
      url: record.revokedUrl,
    };
  }
  if (record.expiresAt !== null && Date.parse(record.expiresAt) <= now) {
    return { kind: 'ended', reason: 'expired', at: record.expiresAt, url: null };
  }
  if (digest === record.digest) return CURRENT;
  const until = record.previousExpiresAt!;
  if (Date.parse(until) > now) return { kind: 'previous', until };
  return { kind: 'ended', reason: 'rolled', at: until, url: null };
}

/**
 * The secrets a roll ends, each with when it ended: the previous one (when its grace ran out, if
 * that came first), and the current one when the roll gives it no grace. Both stores keep them as
 * ended secrets (`rolled`).
 */
export function secretsEndedByRoll(
  record: Pick<KeyRecord, 'digest' | 'previousDigest' | 'previousExpiresAt'>,
  { previousExpiresAt, now }: Pick<KeyRoll, 'previousExpiresAt' | 'now'>,
): { digest: string; at: string }[] {
  const ended: { digest: string; at: string }[] = [];
  if (record.previousDigest !== null) {
    const graceEnd = record.previousExpiresAt!;
    ended.push({ digest: record.previousDigest, at: graceEnd < now ? graceEnd : now });
  }
  if (!(previousExpiresAt > now)) ended.push({ digest: record.digest, at: now });
  return ended;
}
