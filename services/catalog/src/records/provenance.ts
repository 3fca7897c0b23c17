import type { ToolRecord, ToolRecordInput } from '../schemas/tool';
import { formatInstant, parseDateTime } from './date-time';

/**
 * A record's provenance (docs/dataset-format.md): `source`, the page its facts were checked on,
 * and `verifiedAt`, when. Every stored record has both; an import or an admin write may leave
 * either out, so that import files written before they existed still import.
 */

/**
 * The `verifiedAt` of a record stored before provenance existed: the earliest instant, since
 * nobody knows when its facts were checked, so that it comes first among the stale ones.
 */
export const UNVERIFIED_AT = formatInstant(0);

/** An instant in the canonical form both stores compare as text (date-time.ts). */
function canonical(instant: string): string {
  const ms = parseDateTime(instant);
  return ms === undefined ? instant : formatInstant(ms);
}

/**
 * The record as a write stores it, given the live record it replaces (`stored`, undefined for a
 * new slug) and the time of the write (`at`, canonical). What the record says wins. Without
 * `verifiedAt` it keeps the stored one, else it is verified at the write; without `source` it
 * keeps the stored one, else its facts are taken to come from its `website`. `verifiedAt` is
 * stored in canonical form. Any other field (an export's `updatedAt`) is passed on untouched:
 * the store's change clock deals with it.
 */
export function withProvenance<T extends ToolRecordInput>(
  record: T,
  stored: ToolRecord | undefined,
  at: string,
): T & ToolRecord {
  return {
    ...record,
    source: record.source ?? stored?.source ?? record.website,
    verifiedAt: canonical(record.verifiedAt ?? stored?.verifiedAt ?? at),
  };
}

/**
 * A record stored before provenance existed, as it is served until an import gives it its own:
 * its website as `source`, UNVERIFIED_AT as `verifiedAt` (what the embedded store's migration
 * writes, and the MongoDB store's projection reads). A record that has both is returned as is.
 */
export function withOlderProvenance<T extends ToolRecordInput>(record: T): T & ToolRecord {
  if (record.source !== undefined && record.verifiedAt !== undefined) {
    return record as T & ToolRecord;
  }
  return {
    ...record,
    source: record.source ?? record.website,
    verifiedAt: record.verifiedAt ?? UNVERIFIED_AT,
  };
}
