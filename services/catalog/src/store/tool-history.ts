import type { ToolRecord } from '../schemas/tool';
import { toolContent } from './change-clock';
import type { OutboxEntry, ToolChange } from './catalog-store';

/** A field's value before and after a change; null where the record had none. */
export interface FieldChange {
  from: unknown;
  to: unknown;
}

/** What a change did to a record's fields, by field (docs/api.md#staying-in-sync). */
export type FieldChanges = Record<string, FieldChange>;

/**
 * One entry of a record's history: a change with the catalog version it made, the time of its
 * write (the outbox's `at`) and its field-level changes. Kept for as long as the catalog holds
 * the slug, tombstone included, so a deleted tool keeps its history; the outbox it comes from
 * is pruned after CHANGES_RETENTION_DAYS.
 */
export interface HistoryEntry {
  version: number;
  at: string;
  type: ToolChange['type'];
  slug: string;
  changes: FieldChanges;
}

/**
 * The field-level changes of one change, given the record it replaced: a creation lists every
 * initial value (from null), an update each changed field, a deletion nothing.
 */
export function fieldChanges(change: ToolChange, before: ToolRecord | undefined): FieldChanges {
  if (change.type === 'tool.deleted') return {};
  const after = toolContent(change.tool) as Record<string, unknown>;
  const old = before as Record<string, unknown> | undefined;
  const fields = change.type === 'tool.created' ? Object.keys(after) : change.changedFields;
  const changes: FieldChanges = {};
  for (const field of fields) {
    changes[field] = {
      from: change.type === 'tool.created' ? null : (old?.[field] ?? null),
      to: after[field] ?? null,
    };
  }
  return changes;
}

/** The history entries of changes written at `at`, numbered as their outbox entries. */
export function historyEntries(
  changes: readonly ToolChange[],
  before: ReadonlyMap<string, ToolRecord>,
  lastVersion: number,
  at: string,
): HistoryEntry[] {
  const first = lastVersion - changes.length + 1;
  return changes.map((change, index) => ({
    version: first + index,
    at,
    type: change.type,
    slug: change.slug,
    changes: fieldChanges(change, before.get(change.slug)),
  }));
}

/**
 * The history an outbox holds, for a store whose history began after its outbox: each update's
 * `from` is the record the slug's previous entry left.
 */
export function historyFromOutbox(entries: readonly OutboxEntry[]): HistoryEntry[] {
  const records = new Map<string, ToolRecord>();
  return entries.map((entry) => {
    const history: HistoryEntry = {
      version: entry.version,
      at: entry.at,
      type: entry.type,
      slug: entry.slug,
      changes: fieldChanges(entry, records.get(entry.slug)),
    };
    if (entry.type === 'tool.deleted') records.delete(entry.slug);
    else records.set(entry.slug, entry.tool);
    return history;
  });
}
