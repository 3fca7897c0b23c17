import type { KeyActor, KeyEvent, KeyPatch, KeyRecord, KeyRoll } from './key-store';

/**
 * The events a change of a key records, from the key as it was and the change (docs/api.md, "Key
 * events"): one event per kind of change, none for a change that changes nothing. Both stores
 * write what this says, so they record the same history.
 */
export function eventsOfPatch(
  before: KeyRecord,
  patch: KeyPatch,
  actor: KeyActor,
  at: string,
): KeyEvent[] {
  const events: KeyEvent[] = [];
  const event = (type: KeyEvent['type'], detail: Record<string, unknown>) =>
    events.push({ type, at, ...actor, detail });
  if (patch.tier !== undefined && patch.tier !== before.tier && before.revokedAt === null) {
    event('tier_changed', { from: before.tier, to: patch.tier });
  }
  const restricted = (['scopes', 'allowedAddresses', 'expiresAt'] as const).filter(
    (field) =>
      patch[field] !== undefined && JSON.stringify(patch[field]) !== JSON.stringify(before[field]),
  );
  if (restricted.length > 0 && before.revokedAt === null) {
    event('restricted', Object.fromEntries(restricted.map((field) => [field, patch[field]])));
  }
  if (patch.revokedAt && before.revokedAt === null) {
    if (patch.revokedReason === 'leaked')
      event('leak_reported', { url: patch.revokedUrl, ended: 'key' });
    else event('revoked', {});
  }
  return events;
}

/** The event of a roll. */
export function rollEvent(roll: KeyRoll, actor: KeyActor): KeyEvent {
  return {
    type: 'rolled',
    at: roll.now,
    ...actor,
    detail: {
      previousKeyExpiresAt: roll.previousExpiresAt,
      ...(roll.expiresAt !== undefined && { expiresAt: roll.expiresAt }),
    },
  };
}

/** The event of a key's creation, with the restrictions it was made with. */
export function createdEvent(record: KeyRecord, actor: KeyActor): KeyEvent {
  const { tier, expiresAt, scopes, allowedAddresses } = record;
  return {
    type: 'created',
    at: record.createdAt,
    ...actor,
    detail: {
      tier,
      ...(expiresAt !== null && { expiresAt }),
      ...(scopes !== null && { scopes }),
      ...(allowedAddresses !== null && { allowedAddresses }),
    },
  };
}

/** The event of a leaked previous secret ended alone. */
export function leakedPreviousEvent(url: string | null, actor: KeyActor, at: string): KeyEvent {
  return { type: 'leak_reported', at, ...actor, detail: { url, ended: 'previous secret' } };
}

/**
 * The events as listed: the stored ones, and the key's end once it came (an end is not a write,
 * so it is told from the key itself), newest first.
 */
export function listedEvents(record: KeyRecord, stored: KeyEvent[], now: number): KeyEvent[] {
  if (record.expiresAt === null || Date.parse(record.expiresAt) > now) return stored;
  const expired: KeyEvent = {
    type: 'expired',
    at: record.expiresAt,
    by: 'operator',
    address: null,
    detail: {},
  };
  return [expired, ...stored].sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
}
