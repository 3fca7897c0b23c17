import type { ToolRecord } from '../schemas/tool';
import { toolContent } from './change-clock';

/** JSON with object keys sorted: equal data, equal text, whatever the key order of the source. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/**
 * The top-level fields whose values differ between two versions of a tool's content, in field
 * order. `updatedAt` is not content: a record that differs in it alone is unchanged.
 */
export function changedFields(before: ToolRecord, after: ToolRecord): string[] {
  const [old, now] = [toolContent(before), toolContent(after)];
  const fields = new Set([...Object.keys(old), ...Object.keys(now)]);
  return [...fields].filter(
    (field) =>
      canonical(old[field as keyof ToolRecord]) !== canonical(now[field as keyof ToolRecord]),
  );
}
