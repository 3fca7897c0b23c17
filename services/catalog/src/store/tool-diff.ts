import type { Tool } from '../schemas/tool';

/** JSON with object keys sorted: equal data, equal text, whatever the key order of the source. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/** The top-level fields whose values differ between two versions of a tool, in field order. */
export function changedFields(before: Tool, after: Tool): string[] {
  const fields = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...fields].filter(
    (field) => canonical(before[field as keyof Tool]) !== canonical(after[field as keyof Tool]),
  );
}
